"""Errors the cortex raises on purpose, each with a stable code the caller can match on."""

from __future__ import annotations


class CortexError(Exception):
    """Base of every deliberate cortex error; the message starts with `[code]`."""

    code = "cortex_error"

    def __init__(self, message: str) -> None:
        super().__init__(f"[{self.code}] {message}")


class InvalidInputError(CortexError):
    """A value from the caller breaks a rule (pattern, length, characters, range)."""

    code = "invalid_input"


class EntityExistsError(CortexError):
    """`add_entity` with an id that is already recorded: history is never rewritten."""

    code = "entity_exists"


class EntityNotFoundError(CortexError):
    """An id that names no recorded entity."""

    code = "entity_not_found"


class RelationExistsError(CortexError):
    """The same (src, rel, dst) triple is already recorded."""

    code = "relation_exists"


class WriteFailedError(CortexError):
    """An append could not be made durable (an I/O error, a file-size limit); nothing of it was kept."""

    code = "write_failed"


class DiskFullError(WriteFailedError):
    """The disk (or the user's quota) is full: the append was undone, the files are as they were."""

    code = "disk_full"
