"""Leg 1 of enterprise-managed authorization against a real HTTP identity provider on loopback.

The IdP is a small `http.server` in a thread: it records the token-exchange form it gets and
answers what the test sets. The whole flow (both legs, through a gateway) runs against the
official suite's IdP in tests/oauth/test_oauth_conformance_client.py; here, what Nexus sends
and how it reports a refusal without repeating the ID token.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from mcp_nexus.config.oauth import IdentityProviderSettings
from mcp_nexus.upstream.oauth.errors import LoginFailed
from mcp_nexus.upstream.oauth.grants import ID_JAG_TYPE, ID_TOKEN_TYPE, TOKEN_EXCHANGE, exchange_id_token

ID_TOKEN = "eyJ.the-enterprise-id-token.sig"


class IdentityProvider:
    def __init__(self) -> None:
        self.forms: list[dict[str, str]] = []
        self.status = 200
        self.answer: dict[str, Any] = {"access_token": "id-jag-1", "issued_token_type": ID_JAG_TYPE}
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                provider.forms.append({k: v[0] for k, v in form.items()})
                body = json.dumps(provider.answer).encode()
                self.send_response(provider.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # quiet test output
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token"


@pytest.fixture
def idp() -> Iterator[IdentityProvider]:
    provider = IdentityProvider()
    thread = threading.Thread(target=provider.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        provider.server.shutdown()
        provider.server.server_close()
        thread.join(5)


async def test_the_id_token_is_exchanged_for_an_id_jag_naming_the_authorization_server_and_the_server(
    idp: IdentityProvider, tmp_path: Path
) -> None:
    token_file = tmp_path / "id-token"
    token_file.write_text(ID_TOKEN + "\n")
    settings = IdentityProviderSettings(
        token_endpoint=idp.url, client_id="nexus-at-idp", id_token_file=str(token_file)
    )
    jag = await exchange_id_token(
        "wiki", settings, audience="http://127.0.0.1:1", resource="http://127.0.0.1:2/mcp"
    )
    assert jag == "id-jag-1"
    assert idp.forms == [
        {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG_TYPE,
            "subject_token": ID_TOKEN,  # the file's content, without its newline
            "subject_token_type": ID_TOKEN_TYPE,
            "audience": "http://127.0.0.1:1",
            "resource": "http://127.0.0.1:2/mcp",
            "client_id": "nexus-at-idp",
        }
    ]


async def test_a_refused_exchange_names_the_idps_error_never_the_id_token(idp: IdentityProvider) -> None:
    idp.status = 400
    idp.answer = {"error": "invalid_grant", "error_description": "the ID token has expired"}
    settings = IdentityProviderSettings(
        token_endpoint=idp.url, client_id="c", client_secret="s3", id_token=ID_TOKEN
    )
    with pytest.raises(LoginFailed) as caught:
        await exchange_id_token("wiki", settings, audience="http://a", resource="http://r/mcp")
    message = str(caught.value)
    assert "invalid_grant: the ID token has expired" in message and "(400" in message
    assert ID_TOKEN not in message and "s3" not in message
    assert idp.forms[0]["client_secret"] == "s3"  # the IdP's own client secret, when configured


async def test_an_answer_without_an_id_jag_is_refused(idp: IdentityProvider) -> None:
    idp.answer = {
        "access_token": "an-access-token",
        "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
    }
    settings = IdentityProviderSettings(token_endpoint=idp.url, client_id="c", id_token=ID_TOKEN)
    with pytest.raises(LoginFailed, match="holds no ID-JAG"):
        await exchange_id_token("wiki", settings, audience="http://a", resource="http://r/mcp")


async def test_an_empty_or_missing_id_token_file_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "id-token"
    empty.write_text("\n")
    for path, words in ((empty, "is empty"), (tmp_path / "absent", "id_token_file")):
        settings = IdentityProviderSettings(
            token_endpoint="http://127.0.0.1:9/t", client_id="c", id_token_file=str(path)
        )
        with pytest.raises(LoginFailed, match=words):
            await exchange_id_token("wiki", settings, audience="http://a", resource="http://r/mcp")
