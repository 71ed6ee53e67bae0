"""A `client_credentials` server whose credentials the authorization server refuses: the error names the setting.

The authorization server is the real OpenID provider (npm `oidc-provider`, identity/oidc_peer.py);
the upstream is a `nexus serve` that takes only its tokens (test_oauth_per_user_token_exchange.py).
A wrong `auth.client_secret`, or a `client_id` the provider does not know, is refused by the
provider with RFC 6749's `invalid_client`. The server must go to ERROR with a reason that says
which settings to check, keeps the provider's own answer, and never shows the secret.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp.client.auth.exceptions import OAuthTokenError

from identity.oidc_peer import Idp
from lifecycle.faults import document
from mcp_nexus.config.load import config_from_document
from mcp_nexus.config.oauth import OAuthSettings
from mcp_nexus.runtime import Runtime, RuntimeOptions
from mcp_nexus.upstream.oauth.refusal import DESCRIPTION_MAX, refusal_of, settings_to_check
from mcp_nexus.upstream.oauth.sdk_flow_log import SDK_LOGGER
from mcp_nexus.upstream.status import UpstreamState
from oauth.test_oauth_per_user_token_exchange import NEXUS_CLIENT, protected_upstream
from support.polling import eventually


@asynccontextmanager
async def gateway_with(upstream_url: str, idp: Idp, client_id: str, secret: str) -> AsyncIterator[Runtime]:
    server = {
        "transport": "http",
        "url": upstream_url,
        "auth": {
            "grant": "client_credentials",
            "client_id": client_id,
            "client_secret": secret,
            "issuer": idp.issuer,
            "scopes": ["mcp:tools"],
        },
    }
    config, _ = config_from_document(document({"up": server}))
    async with Runtime(
        config, RuntimeOptions(http=False, bridge=False, watch=False, wait_ready=False)
    ) as runtime:
        yield runtime


@pytest.mark.parametrize(
    ("client_id", "secret"),
    [(NEXUS_CLIENT[0], "not-the-secret-4711"), ("nobody-registered-this", "not-the-secret-4711")],
    ids=["wrong-secret", "unknown-client"],
)
async def test_refused_client_credentials_name_the_settings_and_never_the_secret(
    tmp_path: Path, idp: Idp, client_id: str, secret: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with protected_upstream(tmp_path, idp) as (upstream_url, _):
        async with gateway_with(upstream_url, idp, client_id, secret) as runtime:
            upstream = runtime.gateway.upstreams["up"]
            await eventually(
                lambda: upstream.status.state is UpstreamState.ERROR and bool(upstream.status.last_error),
                timeout=30,
                what="up in ERROR after the provider refused its credentials",
            )
            reason = upstream.status.last_error or ""
            assert "invalid_client" in reason, reason  # the provider's own word is kept
            assert "auth.client_id" in reason and "auth.client_secret" in reason, reason
            assert "'up'" in reason, reason
            assert secret not in reason, reason
        # Said once per attempt, as the server's state; not again as the SDK's traceback.
        assert any(reason in record.getMessage() for record in caplog.records)
        sdk = [record for record in caplog.records if record.name == SDK_LOGGER]
        assert not sdk, [record.getMessage() for record in sdk]
        assert all(secret not in record.getMessage() for record in caplog.records)


def _settings(**fields: object) -> OAuthSettings:
    return OAuthSettings.model_validate({"grant": "client_credentials", "client_id": "c", **fields})


@pytest.mark.parametrize(
    ("body", "fields", "named"),
    [
        ('{"error":"invalid_scope"}', {"client_secret": "s"}, "auth.scopes"),
        ('{"error":"unauthorized_client"}', {"client_secret": "s"}, "auth.grant"),
        (
            '{"error":"invalid_client"}',
            {"private_key_file": "/k.pem", "token_endpoint_auth_method": "private_key_jwt"},
            "auth.private_key_file",
        ),
    ],
)
def test_each_rfc6749_refusal_names_the_settings_it_points_at(
    body: str, fields: dict[str, object], named: str
) -> None:
    code, _ = refusal_of(OAuthTokenError(f"Token exchange failed (400): {body}"))
    assert named in (settings_to_check(_settings(**fields), code) or "")


@pytest.mark.parametrize(
    "message",
    [
        "Token exchange failed (502): <html>bad gateway</html>",
        'Token exchange failed (400): {"error":"slow_down"}',
        "No refresh token available",
    ],
)
def test_a_refusal_it_cannot_read_or_place_stays_the_sdks_error(message: str) -> None:
    code, _ = refusal_of(OAuthTokenError(message))
    assert not code or settings_to_check(_settings(client_secret="s"), code) is None


def test_a_hostile_description_is_cut_and_cannot_forge_a_log_line() -> None:
    body = json.dumps(
        {"error": "invalid_client", "error_description": "bad\n2026-11-27 ERROR forged" + "x" * 10_000}
    )
    code, description = refusal_of(OAuthTokenError(f"Token exchange failed (401): {body}"))
    assert code == "invalid_client"
    assert "\n" not in description and description.startswith("bad?2026-11-27 ERROR forged")
    assert len(description) <= DESCRIPTION_MAX + 3
