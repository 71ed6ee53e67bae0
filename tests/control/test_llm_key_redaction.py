"""A model endpoint that echoes the key it was sent never gets it out of Nexus.

A real `nexus serve` whose `llm` key comes from `$<api_key_env>` talks to the fake
chat-completions server, which answers 401 "Incorrect API key provided: <key>" and also
echoes a header secret of another server's config entry. Neither appears in `/api/tasks`,
`/api/tasks/{id}` (with the LLM exchanges), the `nexus.task_status` tool, the gateway's log,
or `nexus task run|ls|show [--details]`. Controls prove the leak happened: the endpoint saw the
key, and the error reads "Incorrect API key provided: ***" with the key's last 4 characters.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path
from typing import Any

from support.fake_openai import Reply, error, fake_openai
from support.processes import VENV_BIN
from support.served_gateway import gateway_env, served

LLM_KEY = "sk-proj-" + secrets.token_urlsafe(30)
HEADER_SECRET = "hdr-" + secrets.token_hex(16)


def echo_the_key(_body: dict[str, Any]) -> Reply:
    return error(
        401,
        f"Incorrect API key provided: {LLM_KEY}. You can find your API key at "
        f"https://platform.openai.com/account/api-keys (and {HEADER_SECRET} is not one either).",
    )


def test_an_echoed_key_leaves_nexus_nowhere(tmp_path: Path) -> None:
    with fake_openai(echo_the_key, api_key=LLM_KEY) as fake:
        config = tmp_path / "nexus.json"
        config.write_text(
            json.dumps(
                {
                    "gateway": {"include_builtins": False},
                    "servers": {
                        "remote": {
                            "transport": "http",
                            "url": "http://127.0.0.1:9/mcp",
                            "headers": {"X-API-Key": HEADER_SECRET},
                            "enabled": False,
                        }
                    },
                    "llm": {
                        "base_url": fake.base_url,
                        "api_key_env": "MY_LLM_KEY",
                        "model": "qwen3-max",
                        "max_retries": 0,
                        "timeout": 10,
                    },
                    "control": {"enabled": True, "queue_path": str(tmp_path / "tasks.sqlite")},
                }
            )
        )
        env = gateway_env(tmp_path, MY_LLM_KEY=LLM_KEY)
        with served(config, tmp_path, env=env) as gateway:
            cli_env = {**env, "NEXUS_URL": gateway.base}

            def nexus_task(*args: str) -> str:
                done = subprocess.run(
                    [str(VENV_BIN / "nexus"), "task", *args],
                    env=cli_env,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                return done.stdout + done.stderr

            shown = [nexus_task("run", "turn on the living-room light", "--timeout", "30")]
            listed = gateway.get("/api/tasks").json()["tasks"]
            assert len(listed) == 1 and listed[0]["status"] == "failed", listed
            task_id = listed[0]["id"]
            shown += [nexus_task("ls"), nexus_task("show", task_id), nexus_task("show", task_id, "--details")]
            one = gateway.get(f"/api/tasks/{task_id}?details=1").text
            tool = gateway.call("nexus.task_status", {"task_id": task_id, "details": True}).text
            texts = {
                "/api/tasks": json.dumps(listed),
                "/api/tasks/{id}": one,
                "nexus.task_status": tool,
                **{f"nexus task output {n}": out for n, out in enumerate(shown)},
            }
        log = gateway.log.read_text()  # after the gateway stopped: everything it wrote
        texts["gateway log"] = log

    # Controls: the key went to the endpoint, which echoed it, and the echo reached every output.
    assert fake.requests, "the model endpoint was never asked"
    masked_key = f"Incorrect API key provided: ***{LLM_KEY[-4:]}"
    assert masked_key in listed[0]["error"], listed[0]["error"]
    assert masked_key in one and masked_key in tool and masked_key in shown[0]
    assert "answered 401" in log
    for where, text in texts.items():
        for secret in (LLM_KEY, HEADER_SECRET, json.dumps(LLM_KEY)[1:-1]):
            assert secret not in text, f"{where} holds a secret:\n{text[:3000]}"
