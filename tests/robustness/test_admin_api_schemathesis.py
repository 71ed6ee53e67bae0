"""Schemathesis over the admin API's own OpenAPI document: no generated request gets a 5xx.

The gateway runs as `nexus serve` on a free loopback port with a token, in front of embedded
servers only (the demo echo/add server and the admin peer), so no upstream can legitimately
fail: every 5xx is a bug. Generation is seeded (derandomized) and bounded per operation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from mcp_nexus.frontends.admin.api import openapi_document
from support.processes import VENV_BIN, free_port, running, wait_for_http

EXAMPLES_PER_OPERATION = 50
TOKEN = "schemathesis-t0ken"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CONFIG = {
    "gateway": {"include_builtins": False, "token": TOKEN},
    "servers": {
        "demo": {"transport": "embedded", "module": "support.demo_server:create_server"},
        "peer": {"transport": "embedded", "module": "frontends.admin_peer:create_server"},
    },
}


@pytest.fixture(scope="module")
def admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("schemathesis")
    config = tmp / "nexus.json"
    config.write_text(json.dumps(CONFIG))
    port = free_port()
    args = [str(VENV_BIN / "nexus"), "serve", "-c", str(config), "--port", str(port)]
    with running(args, log=tmp / "gw.log") as proc:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        yield f"http://127.0.0.1:{port}"
        assert proc.poll() is None, "the gateway exited during the run"
        log = (tmp / "gw.log").read_text(errors="replace")
        assert "Traceback" not in log, log[-4000:]


@pytest.fixture(scope="module")
def admin_schema(admin_url: str) -> schemathesis.BaseSchema:
    """The document as the gateway serves it (not as this test imagines it)."""
    schema = schemathesis.openapi.from_url(f"{admin_url}/api/openapi.json", headers=AUTH)
    schema.config.update(base_url=admin_url)
    return schema


# One test per operation and mode; the live document must have the same operations (checked below).
OPERATIONS = sorted(
    f"{method.upper()} {path}" for path, item in openapi_document()["paths"].items() for method in item
)
# Random tool names only reach the 404 branch: these pin real tools so generated arguments reach
# validation, the pipeline and the servers (and the result encoder).
CALL = "POST /api/tools/{name}/call"
TOOLS = [
    "demo.add",
    "demo.echo",
    "demo.fail",
    "peer.echo_value",
    "peer.lone_surrogate",
    "peer.lone_surrogate_structured",
]
# Pinned tools first: a server action on a generated name can never stop their servers before them.
TARGETS = [(CALL, tool) for tool in TOOLS] + [(label, None) for label in OPERATIONS]


def test_the_served_document_lists_every_operation(admin_schema: schemathesis.BaseSchema) -> None:
    served = {result.ok().label for result in admin_schema.get_all_operations()}
    # Schemathesis leaves out the operation that serves the document itself.
    assert served | {"GET /api/openapi.json"} == set(OPERATIONS)


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
@pytest.mark.parametrize(("label", "tool"), TARGETS, ids=[f"{lb} {t or ''}".strip() for lb, t in TARGETS])
def test_no_generated_request_gets_a_server_error(
    admin_schema: schemathesis.BaseSchema, label: str, tool: str | None, mode: GenerationMode
) -> None:
    operation = admin_schema.find_operation_by_label(label)
    assert operation is not None, f"{label} is missing from the served document"
    pinned = None if tool is None else {"name": tool}

    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=pinned))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def each(case: schemathesis.Case) -> None:
        # Every default check: no 5xx, documented status codes, content types and response schemas.
        # The document cannot know a tool's own input schema, so for a pinned tool a "valid"
        # body may rightly get 422: that one check is left out there.
        excluded = [] if tool is None else [positive_data_acceptance]
        case.call_and_validate(headers=AUTH, timeout=10, excluded_checks=excluded)

    each()
