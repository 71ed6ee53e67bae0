"""`gateway.audit`: the audit log of tool calls and admin actions (audit/, docs/IDENTITY.md).

    gateway:
      audit:
        enabled: true          # the default
        arguments: digest      # or "values": record the arguments themselves, not only their hash
        max_file_bytes: 16777216
        max_file_age: 86400

On by default: an audit trail that has to be switched on is missing on the day it is needed,
and it costs one queued record per call (written, hashed and flushed off the call's path). It
records no argument values unless `arguments: values` says so, since those may hold secrets.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mcp_nexus.config.schema_base import Strict


class AuditSettings(Strict):
    enabled: bool = Field(default=True, description="record tool calls and admin actions (gateway serving)")
    dir: str | None = Field(default=None, description="folder of the log files; default: <data dir>/audit")
    arguments: Literal["digest", "values"] = Field(
        default="digest",
        description="digest: a SHA-256 of each call's arguments; values: the arguments themselves",
    )
    max_file_bytes: int = Field(
        default=16 * 1024 * 1024, ge=4096, description="the current file is rotated past this size"
    )
    max_file_age: float = Field(
        default=86400.0, gt=0, description="seconds after which the current file is rotated"
    )
    queue_max: int = Field(
        default=10_000,
        ge=1,
        description="records waiting to be written; past it a record is dropped and counted, never waited for",
    )
