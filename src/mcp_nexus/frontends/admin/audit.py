"""The audit log on the admin API, for the dashboard's Audit page; mounted from the HTTP app.

    GET /api/audit          records, newest first, filtered and paged:
                            who, tool (substrings; tool also matches an admin action's route),
                            outcome, kind (tool_call | admin), since, until (ISO 8601 or epoch
                            seconds), before (a seq: the page after the one that ended there), limit
    GET /api/audit/verify   the hash chain checked (audit/chain.py): ok, or where it breaks

Reads the files the writer appends (audit/writer.py); a record reaches them within 50 ms. A
page is bounded twice: at most MAX_LIMIT records, and at most MAX_SCAN lines read for it (a
filter that matches little on a large log answers with `next_before` to go on from, rather than
reading every file). Files wholly newer than `before` are skipped by their names (each is named
by the seq of its first line). Viewers may read it: it holds argument digests, not values,
unless `gateway.audit.arguments: values` was chosen (docs/IDENTITY.md).
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.routing import Route

from mcp_nexus.audit.chain import FILE_PREFIX, FILE_SUFFIX, log_files, verify
from mcp_nexus.audit.writer import audit_folder
from mcp_nexus.frontends.admin.json_io import AdminJSONResponse, error_response
from mcp_nexus.gateway import Gateway

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_SCAN = 200_000  # lines read for one page at most
OUTCOMES = ("ok", "error", "tool_error", "cancelled", "denied")
KINDS = ("tool_call", "admin", "dropped")
_LINE_IN_PROBLEM = re.compile(r"(\S+\.jsonl) line (\d+)")


class BadQuery(ValueError):
    pass


def _when(value: str | None, name: str) -> datetime | None:
    if value is None or value == "":
        return None
    try:
        if re.fullmatch(r"\d+(\.\d+)?", value):
            return datetime.fromtimestamp(float(value), UTC)
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):  # OSError: an epoch the platform cannot represent
        raise BadQuery(f"{name} must be an ISO 8601 time or epoch seconds, got {value!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class AuditQuery:
    who: str | None = None
    tool: str | None = None
    outcome: str | None = None
    kind: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    before: int | None = None
    limit: int = DEFAULT_LIMIT

    @staticmethod
    def parse(params: Any) -> AuditQuery:
        outcome, kind = params.get("outcome") or None, params.get("kind") or None
        if outcome is not None and outcome not in OUTCOMES:
            raise BadQuery(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
        if kind is not None and kind not in KINDS:
            raise BadQuery(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        numbers: dict[str, int | None] = {}
        for name, low, high in (("limit", 1, MAX_LIMIT), ("before", 1, None)):
            raw = params.get(name)
            if raw in (None, ""):
                numbers[name] = None
                continue
            if not raw.isdigit() or int(raw) < low or (high is not None and int(raw) > high):
                bound = f"from {low} to {high}" if high is not None else f"of at least {low}"
                raise BadQuery(f"{name} must be a whole number {bound}, got {raw!r}")
            numbers[name] = int(raw)
        return AuditQuery(
            who=(params.get("who") or "").strip().lower() or None,
            tool=(params.get("tool") or "").strip().lower() or None,
            outcome=outcome,
            kind=kind,
            since=_when(params.get("since"), "since"),
            until=_when(params.get("until"), "until"),
            before=numbers["before"],
            limit=numbers["limit"] or DEFAULT_LIMIT,
        )

    def matches(self, record: dict[str, Any]) -> bool:
        if self.kind is not None and record.get("kind") != self.kind:
            return False
        if self.outcome is not None and record.get("outcome") != self.outcome:
            return False
        if self.who is not None:
            names = (record.get("who"), record.get("subject"), record.get("client_id"), record.get("client"))
            if not any(isinstance(n, str) and self.who in n.lower() for n in names):
                return False
        if self.tool is not None:
            what = record.get("tool") or record.get("action") or ""
            if self.tool not in str(what).lower():
                return False
        if self.since is not None or self.until is not None:
            when = _when(str(record.get("time", "")), "time") if record.get("time") else None
            if when is None:
                return False
            if self.since is not None and when < self.since:
                return False
            if self.until is not None and when > self.until:
                return False
        return True


def _first_seq(path: Path) -> int:
    try:
        return int(path.name[len(FILE_PREFIX) : -len(FILE_SUFFIX)])
    except ValueError:
        return 0


def read_page(folder: Path, query: AuditQuery) -> dict[str, Any]:
    """One page of records, newest first, and where the next page starts (None: no more)."""
    found: list[dict[str, Any]] = []
    scanned = 0
    for path in reversed(log_files(folder)):
        if query.before is not None and _first_seq(path) >= query.before:
            continue  # every line of this file is at or after `before`
        try:
            lines = path.read_bytes().splitlines()
        except OSError:
            continue
        for raw in reversed(lines):
            try:
                record = json.loads(raw)
            except ValueError:
                continue  # a broken line shows in the verification, not here
            seq = record.get("seq")
            if not isinstance(seq, int) or (query.before is not None and seq >= query.before):
                continue
            scanned += 1
            if query.matches(record):
                found.append(record)
                if len(found) == query.limit:
                    return {"records": found, "next_before": seq if seq > 1 else None, "scanned": scanned}
            if scanned >= MAX_SCAN:
                return {"records": found, "next_before": seq if seq > 1 else None, "scanned": scanned}
    return {"records": found, "next_before": None, "scanned": scanned}


def verification(folder: Path) -> dict[str, Any]:
    verdict = verify(folder)
    where = _LINE_IN_PROBLEM.search(verdict.problem or "")
    return {
        "ok": verdict.ok,
        "lines": verdict.lines,
        "files": verdict.files,
        "problem": verdict.problem,
        # where the chain breaks, when it does: the file and the line number in it
        "file": where.group(1) if where else None,
        "line": int(where.group(2)) if where else None,
    }


def audit_openapi_paths(json_response: Any, guarded: Any, error: dict[str, Any]) -> dict[str, Any]:
    """The audit operations for the admin API's OpenAPI document (helpers passed in from api.py)."""
    page = {
        "type": "object",
        "properties": {
            "enabled": {"type": "boolean"},
            "records": {"type": "array", "items": {"type": "object"}},
            "next_before": {
                "type": ["integer", "null"],
                "description": "`before` of the next page; null: none",
            },
            "scanned": {"type": "integer"},
        },
        "required": ["records", "next_before"],
    }
    verdict = {
        "type": "object",
        "properties": {
            "enabled": {"type": "boolean"},
            "ok": {"type": "boolean"},
            "lines": {"type": "integer"},
            "files": {"type": "integer"},
            "problem": {"type": ["string", "null"]},
            "file": {"type": ["string", "null"]},
            "line": {"type": ["integer", "null"]},
        },
        "required": ["ok", "lines", "files"],
    }
    return {
        "/api/audit": {
            "get": {
                "summary": "Audit records, newest first, filtered and paged",
                # Described rather than declared, as for /api/index/tools (a schemathesis quirk).
                "description": "Query parameters: `who`, `tool` (substrings), `outcome` "
                f"({', '.join(OUTCOMES)}), `kind` ({', '.join(KINDS)}), `since`, `until` (ISO 8601 or "
                f"epoch seconds), `before` (a seq), `limit` (1-{MAX_LIMIT}, default {DEFAULT_LIMIT}).",
                "responses": guarded(
                    {"200": json_response(page), "400": json_response(error, "A filter that is not valid")}
                ),
            }
        },
        "/api/audit/verify": {
            "get": {
                "summary": "The audit log's hash chain checked: ok, or the file and line where it breaks",
                "responses": guarded({"200": json_response(verdict)}),
            }
        },
    }


def audit_routes(gateway: Gateway) -> list[Route]:
    def folder() -> Path:
        return audit_folder(gateway.config.gateway.audit)

    async def records(request: Request) -> AdminJSONResponse:
        try:
            query = AuditQuery.parse(request.query_params)
        except BadQuery as exc:
            return error_response(400, str(exc))
        page = await asyncio.to_thread(read_page, folder(), query)
        return AdminJSONResponse({"enabled": gateway.config.gateway.audit.enabled, **page})

    async def check(request: Request) -> AdminJSONResponse:
        result = await asyncio.to_thread(verification, folder())
        return AdminJSONResponse({"enabled": gateway.config.gateway.audit.enabled, **result})

    return [
        Route("/api/audit", records, methods=["GET"]),
        Route("/api/audit/verify", check, methods=["GET"]),
    ]
