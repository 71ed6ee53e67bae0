"""The log filter redacts what any logger writes through the root handlers, tracebacks included,
and `redact_data` masks every string of a JSON-like value."""

from __future__ import annotations

import io
import logging

from mcp_nexus.config.secrets import SecretRedactor, install_log_redaction

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"
OTHER = "another-secret-value-42"


def test_every_logger_through_a_root_handler_is_redacted() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        remove = install_log_redaction(SecretRedactor([KEY, OTHER]))
        child = logging.getLogger("mcp_nexus.control.worker")
        child.setLevel(logging.INFO)
        child.info("the model said: Incorrect API key provided: %s", KEY)
        logging.getLogger("openai._base_client").warning("headers %r", {"Authorization": f"Bearer {KEY}"})
        try:
            raise RuntimeError(f"refused {OTHER}")
        except RuntimeError:
            child.exception("task failed")
        remove()
        child.info("after removal: %s", KEY)  # the control shows the filter did the work
    finally:
        root.removeHandler(handler)
    written = stream.getvalue()
    before, after = written.split("after removal: ")
    assert KEY not in before and OTHER not in before, before
    assert f"Incorrect API key provided: ***{KEY[-4:]}" in before
    assert "RuntimeError: refused ***" in before  # the traceback too
    assert after.startswith(KEY)


def test_redact_data_masks_every_string() -> None:
    redactor = SecretRedactor([KEY])
    data = {"error": f"bad key {KEY}", "steps": [{"result": KEY, "n": 3}], KEY: None, "ok": True}
    assert redactor.redact_data(data) == {
        "error": f"bad key ***{KEY[-4:]}",
        "steps": [{"result": f"***{KEY[-4:]}", "n": 3}],
        f"***{KEY[-4:]}": None,
        "ok": True,
    }
    grown = redactor.with_secrets([OTHER])
    assert grown.redact(f"{KEY} {OTHER}") == f"***{KEY[-4:]} ***e-42"
    assert SecretRedactor([]).redact_data(data) is data
