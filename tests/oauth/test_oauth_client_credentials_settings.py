"""The `auth` settings of the grants without a person, and what their providers refuse before any request.

The flows themselves run against the official suite's authorization servers
(tests/oauth/test_oauth_conformance_client.py: auth/client-credentials-*, enterprise-managed
authorization); these are the operator's mistakes, each named by its field.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import httpx2
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from pydantic import ValidationError

from mcp_nexus.config.oauth import OAuthSettings
from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.oauth.errors import LoginFailed
from mcp_nexus.upstream.oauth.grants import unattended_auth
from mcp_nexus.upstream.oauth.refusal import SettingsNamedAuth
from mcp_nexus.upstream.oauth.storage import VaultTokenStorage
from mcp_nexus.upstream.oauth.vault import EncryptedFileVault

URL = "http://127.0.0.1:9/mcp"
IDP = {"token_endpoint": "http://127.0.0.1:9/token", "client_id": "nexus-at-idp", "id_token": "eyJ.id.token"}


def _settings(**fields: Any) -> OAuthSettings:
    return OAuthSettings.model_validate(fields)


def _error(**fields: Any) -> str:
    with pytest.raises(ValidationError) as caught:
        _settings(**fields)
    return str(caught.value)


def _pem(tmp_path: Path) -> Path:
    key = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "client.pem"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    return path


def _auth(settings: OAuthSettings, tmp_path: Path) -> httpx2.Auth:
    storage = VaultTokenStorage(
        "reports", URL, "http://127.0.0.1:1/oauth/callback", settings, EncryptedFileVault(tmp_path)
    )
    return unattended_auth("reports", URL, settings, storage)


def test_the_default_grant_is_a_login_and_the_others_are_named() -> None:
    assert OAuthSettings().grant == "authorization_code"
    assert "grant" in _error(grant="password", client_id="c", client_secret="s")


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"grant": "client_credentials", "client_secret": "s"}, "'client_secret' needs the 'client_id'"),
        (
            {"grant": "client_credentials", "client_id": "c"},
            "needs 'client_secret', or token_endpoint_auth_method",
        ),
        (
            {
                "grant": "client_credentials",
                "client_id": "c",
                "token_endpoint_auth_method": "private_key_jwt",
            },
            "'private_key_file' go together",
        ),
        ({"client_id": "c", "private_key_file": "/k.pem"}, "'private_key_file' go together"),
        (
            {
                "client_id": "c",
                "token_endpoint_auth_method": "private_key_jwt",
                "private_key_file": "/k.pem",
            },
            "'private_key_jwt' needs grant 'client_credentials'",
        ),
        (
            {
                "grant": "client_credentials",
                "client_id": "c",
                "client_secret": "s",
                "redirect_uri": "http://x/cb",
            },
            "'redirect_uri' belongs to a login in a browser",
        ),
        (
            {"grant": "client_credentials", "client_id": "c", "token_endpoint_auth_method": "none"},
            "needs a confidential client",
        ),
        (
            {
                "grant": "client_credentials",
                "client_id": "c",
                "client_secret": "s",
                "signing_algorithm": "HS256",
            },
            "'signing_algorithm' must be one of",
        ),
        (
            {"grant": "client_credentials", "client_id": "c", "client_secret": "s", "issuer": "auth.example"},
            "'issuer'",
        ),
        (
            {"grant": "identity_assertion", "client_id": "c", "client_secret": "s"},
            "needs 'issuer', 'identity_provider'",
        ),
        (
            {
                "grant": "identity_assertion",
                "client_id": "c",
                "client_secret": "s",
                "issuer": "http://127.0.0.1:9",
                "identity_provider": {"token_endpoint": "http://127.0.0.1:9/token", "client_id": "i"},
            },
            "exactly one of 'id_token' and 'id_token_file'",
        ),
        (
            {"client_id": "c", "client_secret": "s", "identity_provider": IDP},
            "'identity_provider' needs grant 'identity_assertion'",
        ),
    ],
)
def test_a_setting_that_cannot_work_is_refused_naming_its_field(fields: dict[str, Any], named: str) -> None:
    assert named in _error(**fields)


def test_a_server_config_takes_the_grant_and_keeps_its_secrets_out_of_its_repr() -> None:
    config = ServerConfig.model_validate(
        {
            "name": "reports",
            "transport": "http",
            "url": URL,
            "auth": {"grant": "identity_assertion", "client_id": "c", "client_secret": "hush-1"}
            | {"issuer": "http://127.0.0.1:9", "identity_provider": IDP},
        }
    )
    assert config.auth is not None and config.auth.identity_provider is not None
    shown = repr(config.auth)
    assert "hush-1" not in shown and "eyJ.id.token" not in shown


def _provider(settings: OAuthSettings, tmp_path: Path) -> httpx2.Auth:
    """The SDK provider inside the auth: a refused token request is named in the settings' terms (refusal.py)."""
    auth = _auth(settings, tmp_path)
    assert isinstance(auth, SettingsNamedAuth)
    return auth.inner


def test_each_grant_gets_the_sdk_provider_for_it(tmp_path: Path) -> None:
    basic = _settings(grant="client_credentials", client_id="c", client_secret="s")
    assert type(_provider(basic, tmp_path)) is ClientCredentialsOAuthProvider
    signed = _settings(
        grant="client_credentials",
        client_id="c",
        token_endpoint_auth_method="private_key_jwt",
        private_key_file=str(_pem(tmp_path)),
        signing_algorithm="ES256",
        issuer="http://127.0.0.1:9",
    )
    assert type(_provider(signed, tmp_path)) is PrivateKeyJWTOAuthProvider
    enterprise = _settings(
        grant="identity_assertion",
        client_id="c",
        client_secret="s",
        issuer="http://127.0.0.1:9",
        identity_provider=IDP,
    )
    assert type(_provider(enterprise, tmp_path)) is IdentityAssertionOAuthProvider


def test_a_missing_or_wrong_private_key_fails_the_connect_naming_the_file_not_the_key(tmp_path: Path) -> None:
    def signed(path: Path, algorithm: str = "ES256") -> OAuthSettings:
        return _settings(
            grant="client_credentials",
            client_id="c",
            token_endpoint_auth_method="private_key_jwt",
            private_key_file=str(path),
            signing_algorithm=algorithm,
        )

    with pytest.raises(LoginFailed, match=r"auth\.private_key_file .*nowhere\.pem"):
        _auth(signed(tmp_path / "nowhere.pem"), tmp_path)
    pem = _pem(tmp_path)
    with pytest.raises(LoginFailed, match="is not a private key for signing_algorithm RS256") as caught:
        _auth(signed(pem, "RS256"), tmp_path)  # an EC key cannot sign RS256
    assert "PRIVATE KEY" not in str(caught.value)
