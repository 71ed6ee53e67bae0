"""One JSON-RPC core for every endpoint that speaks JSON-RPC on a stream of frames."""

from mcp_nexus.jsonrpc.codec import (
    LoneSurrogateError,
    ParseError,
    decode,
    decode_checked,
    encode,
    lone_surrogate,
)
from mcp_nexus.jsonrpc.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    JsonRpcError,
    error_body,
)
from mcp_nexus.jsonrpc.peer import JsonRpcPeer, PeerOptions, RawResult

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "JsonRpcError",
    "JsonRpcPeer",
    "LoneSurrogateError",
    "ParseError",
    "PeerOptions",
    "RawResult",
    "decode",
    "decode_checked",
    "encode",
    "error_body",
    "lone_surrogate",
]
