"""frontends/admin/json_io.py in-process: the error-to-status table and the response encoder."""

from __future__ import annotations

import json

import pytest

from mcp_nexus import errors
from mcp_nexus.frontends.admin.json_io import AdminJSONResponse, gateway_error_response, status_of


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.UnknownToolError("Unknown tool: x"), 404),
        (errors.InvalidArgumentsError("bad", data={"path": "$.a"}), 422),
        (errors.ToolTimeoutError("slow"), 504),
        (errors.UnavailableError("down"), 503),
        (errors.NotFoundError("gone"), 503),
        (errors.PermissionDeniedError("no"), 403),
        (errors.InvalidRequestError("odd"), 400),
        (errors.MethodNotFoundError("what"), 404),
        (errors.ParseError("garbage from the server"), 502),
        (errors.InternalError("boom"), 502),
    ],
)
def test_each_gateway_error_has_one_status(error: errors.GatewayError, status: int) -> None:
    assert status_of(error) == status


def test_an_upstreams_own_code_is_a_bad_gateway() -> None:
    error = errors.InternalError("custom")
    error.code = -31999
    assert status_of(error) == 502


def test_an_argument_error_names_the_field_from_the_body() -> None:
    response = gateway_error_response(errors.InvalidArgumentsError("bad", data={"path": "$.items[2]"}))
    assert json.loads(response.body)["path"] == "$.arguments.items[2]"


def test_the_response_is_ascii_with_lone_surrogates_escaped() -> None:
    body = AdminJSONResponse({"text": "a\ud800b", "emoji": "\U0001f600"}).body
    assert body.isascii()
    assert json.loads(body) == {"text": "a\ud800b", "emoji": "\U0001f600"}


def test_non_finite_numbers_become_null() -> None:
    body = AdminJSONResponse({"x": [float("nan"), 1.5, {"y": float("inf")}]}).body
    assert json.loads(body) == {"x": [None, 1.5, {"y": None}]}
