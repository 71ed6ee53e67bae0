"""Where OAuth logins to upstream servers are kept: encrypted, one record per server.

A record is what one login produced: the client registration (client id, and a secret when
the authorization server issued one), the tokens and when the access token expires. It is
JSON encrypted with Fernet (AES-128-CBC and HMAC-SHA256, `cryptography`) under one key:
`$NEXUS_OAUTH_KEY` when set (every replica given the same key reads the same logins), else
`<data dir>/oauth/key`, created on first use with mode 0600. A record that does not decrypt
(another key, a damaged file) reads as no login, and says why in the log: the server then
asks for a login again rather than failing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from cryptography.fernet import Fernet, InvalidToken

logger = logging.getLogger(__name__)

KEY_ENV = "NEXUS_OAUTH_KEY"
KEY_FILE = "key"
_RECORD_SUFFIX = ".login"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


class TokenVaultError(RuntimeError):
    """The vault cannot be used (no key can be read or made)."""


class TokenVault(Protocol):
    """One encrypted login record per server name."""

    async def load(self, server: str) -> dict[str, Any] | None: ...

    async def save(self, server: str, record: dict[str, Any]) -> None: ...

    async def delete(self, server: str) -> bool: ...


def _file_name(server: str) -> str:
    # Server names are config keys: anything outside [A-Za-z0-9_.-] is escaped, so two names
    # never share a file and no name reaches outside the folder.
    escaped = _SAFE_NAME.sub(lambda m: f"%{ord(m.group(0)):04x}", server)
    return f"{escaped}{_RECORD_SUFFIX}"


def load_env_key(env: Mapping[str, str]) -> bytes | None:
    """`$NEXUS_OAUTH_KEY` as a Fernet key, or None when it is not set; a clear error when it is not one."""
    configured = env.get(KEY_ENV)
    if not configured:
        return None
    key = configured.strip().encode()
    try:
        Fernet(key)
    except ValueError as exc:
        raise TokenVaultError(f"${KEY_ENV} is not a Fernet key (32 url-safe base64 bytes): {exc}") from None
    return key


def load_or_create_key(folder: Path, env: dict[str, str] | None = None) -> bytes:
    """The Fernet key: `$NEXUS_OAUTH_KEY`, else the folder's key file (made 0600 when missing)."""
    key = load_env_key(os.environ if env is None else env)
    if key is not None:
        return key
    path = folder / KEY_FILE
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = Fernet.generate_key()
    try:
        # O_EXCL: two gateways starting at once on one data folder end with one key, not two.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    return key


def _read_key(path: Path) -> bytes:
    key = path.read_bytes().strip()
    try:
        Fernet(key)
    except ValueError:
        raise TokenVaultError(f"{path} does not hold a Fernet key; remove it to log in again") from None
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        logger.warning("%s is readable by others (mode %o): it unlocks every stored OAuth login", path, mode)
    return key


class EncryptedFileVault:
    """Login records as encrypted files in one folder (default `<data dir>/oauth`, read at each use:
    `$NEXUS_DATA_DIR` may change in one process, as between tests)."""

    def __init__(self, folder: Path | None = None, *, env: dict[str, str] | None = None) -> None:
        self._folder = folder
        self._env = env
        self._ciphers: dict[Path, Fernet] = {}

    @property
    def folder(self) -> Path:
        if self._folder is not None:
            return self._folder
        from mcp_nexus.paths import data_subdir

        return data_subdir("oauth", self._env)

    def _cipher(self) -> Fernet:
        folder = self.folder
        cipher = self._ciphers.get(folder)
        if cipher is None:
            cipher = self._ciphers[folder] = Fernet(load_or_create_key(folder, self._env))
        return cipher

    def path(self, server: str) -> Path:
        return self.folder / _file_name(server)

    async def load(self, server: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._load, server)

    def _load(self, server: str) -> dict[str, Any] | None:
        try:
            sealed = self.path(server).read_bytes()
        except FileNotFoundError:
            return None
        return open_record(self._cipher(), sealed, server)

    async def save(self, server: str, record: dict[str, Any]) -> None:
        await asyncio.to_thread(self._save, server, record)

    def _save(self, server: str, record: dict[str, Any]) -> None:
        sealed = seal_record(self._cipher(), record)
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        target = self.path(server)
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(sealed)
        os.replace(temporary, target)  # readers see the old record or the new one, never half

    async def delete(self, server: str) -> bool:
        return await asyncio.to_thread(self._delete, server)

    def _delete(self, server: str) -> bool:
        try:
            self.path(server).unlink()
        except FileNotFoundError:
            return False
        return True


def seal_record(cipher: Fernet, record: dict[str, Any]) -> bytes:
    return cipher.encrypt(json.dumps(record, separators=(",", ":")).encode())


def open_record(cipher: Fernet, sealed: bytes, server: str) -> dict[str, Any] | None:
    try:
        record = json.loads(cipher.decrypt(sealed))
    except InvalidToken:
        logger.warning(
            "the stored OAuth login of server %s does not decrypt with this key: a new login is needed",
            server,
        )
        return None
    except ValueError:
        logger.warning("the stored OAuth login of server %s is damaged: a new login is needed", server)
        return None
    return record if isinstance(record, dict) else None


class MemoryVault:
    """Records in memory only (tests; a gateway with nowhere to write)."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}

    async def load(self, server: str) -> dict[str, Any] | None:
        record = self.records.get(server)
        return json.loads(json.dumps(record)) if record is not None else None

    async def save(self, server: str, record: dict[str, Any]) -> None:
        self.records[server] = json.loads(json.dumps(record))

    async def delete(self, server: str) -> bool:
        return self.records.pop(server, None) is not None
