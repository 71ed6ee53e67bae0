"""The encrypted login records (upstream/oauth/vault.py) and the `auth` setting's checks."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from pydantic import ValidationError

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.config.secrets import SecretRedactor
from mcp_nexus.upstream.oauth.vault import KEY_ENV, EncryptedFileVault, TokenVaultError

RECORD = {"tokens": {"access_token": "at-very-secret-0123456789", "token_type": "Bearer"}, "expires_at": 1.0}


def test_a_record_is_sealed_under_a_0600_key_and_reads_back(tmp_path: Path) -> None:
    vault = EncryptedFileVault(tmp_path / "oauth", env={})
    asyncio.run(vault.save("srv/../x", RECORD))
    key = tmp_path / "oauth" / "key"
    assert key.stat().st_mode & 0o777 == 0o600
    files = [p.name for p in (tmp_path / "oauth").iterdir() if p.name != "key"]
    assert files == ["srv%002f..%002fx.login"]  # no name reaches outside the folder
    sealed = (tmp_path / "oauth" / files[0]).read_bytes()
    assert b"at-very-secret" not in sealed and (tmp_path / "oauth" / files[0]).stat().st_mode & 0o777 == 0o600
    assert asyncio.run(EncryptedFileVault(tmp_path / "oauth", env={}).load("srv/../x")) == RECORD
    assert asyncio.run(vault.delete("srv/../x")) is True
    assert asyncio.run(vault.load("srv/../x")) is None


def test_another_key_reads_as_no_login_and_a_bad_key_is_named(tmp_path: Path) -> None:
    asyncio.run(EncryptedFileVault(tmp_path, env={}).save("s", RECORD))
    other = EncryptedFileVault(tmp_path, env={KEY_ENV: Fernet.generate_key().decode()})
    assert asyncio.run(other.load("s")) is None
    with pytest.raises(TokenVaultError, match=KEY_ENV):
        asyncio.run(EncryptedFileVault(tmp_path, env={KEY_ENV: "not-a-key"}).load("s"))
    (tmp_path / "key").write_text("garbage")
    os.chmod(tmp_path / "key", 0o600)
    with pytest.raises(TokenVaultError, match="does not hold a Fernet key"):
        asyncio.run(EncryptedFileVault(tmp_path, env={}).load("s"))


def test_replicas_with_one_key_read_each_others_logins(tmp_path: Path) -> None:
    env = {KEY_ENV: Fernet.generate_key().decode()}
    asyncio.run(EncryptedFileVault(tmp_path, env=env).save("s", RECORD))
    assert asyncio.run(EncryptedFileVault(tmp_path, env=dict(env)).load("s")) == RECORD
    assert not (tmp_path / "key").exists()  # the shared key is used, no file key is made


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"transport": "stdio", "command": "x", "auth": "oauth"}, "applies to http and sse servers"),
        ({"transport": "http", "url": "http://h/mcp", "auth": "bearer"}, 'must be "oauth" or an object'),
        (
            {"transport": "http", "url": "http://h/mcp", "auth": {"client_secret": "s"}},
            "needs the 'client_id'",
        ),
        (
            {"transport": "http", "url": "http://h/mcp", "auth": {"client_metadata_url": "http://h/c.json"}},
            "https URL with a path",
        ),
        (
            {
                "transport": "http",
                "url": "http://h/mcp",
                "auth": {"client_id": "c", "token_endpoint_auth_method": "client_secret_basic"},
            },
            "needs 'client_secret'",
        ),
        ({"transport": "http", "url": "http://h/mcp", "auth": {"clientid": "c"}}, "clientid"),
    ],
)
def test_bad_auth_settings_are_named(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ServerConfig(name="s", **entry)  # type: ignore[arg-type]


def test_the_client_secret_is_a_secret_everywhere() -> None:
    server = ServerConfig(
        name="s",
        transport="http",
        url="http://h/mcp",
        auth={"client_id": "c", "client_secret": "pre-registered-secret-42", "scopes": "a b"},  # type: ignore[arg-type]
    )
    assert server.auth is not None and server.auth.scopes == ["a", "b"]
    assert "pre-registered-secret-42" not in repr(server)
    redacted = SecretRedactor.for_server(server).redact("token exchange failed for pre-registered-secret-42")
    assert "pre-registered-secret-42" not in redacted
