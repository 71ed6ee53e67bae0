"""docker/entrypoint.sh, the image's entrypoint, run directly (no container engine is needed):
it serves only with a token, takes it from NEXUS_TOKEN or a NEXUS_TOKEN_FILE, and its
`healthcheck` (the image's HEALTHCHECK) passes against the gateway it started and fails
when nothing answers. The tests bind 127.0.0.1 (NEXUS_HOST), where the image binds 0.0.0.0."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx2

from support.processes import ROOT, VENV_BIN, child_env, free_port, running, wait_for_http

ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
TOKEN = "entrypoint-test-token-0123456789"


def entrypoint_env(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    env = {name: value for name, value in child_env().items() if not name.startswith("NEXUS_")}
    env["PATH"] = f"{VENV_BIN}:/usr/bin:/bin"  # the image's PATH has its venv first, likewise
    env.update(NEXUS_HOST="127.0.0.1", NEXUS_PORT=str(port), NEXUS_DATA_DIR=str(tmp_path / "data"), **extra)
    return env


def healthcheck(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ENTRYPOINT), "healthcheck"], env=env, capture_output=True, text=True, timeout=10, check=False
    )


def test_without_a_token_it_refuses_to_serve_and_says_how_to_make_one(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(ENTRYPOINT)],
        env=entrypoint_env(tmp_path, free_port()),
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    assert done.returncode == 2
    assert "set NEXUS_TOKEN" in done.stderr and "secrets.token_urlsafe" in done.stderr, done.stderr


def test_an_unreadable_token_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-secret"
    env = entrypoint_env(tmp_path, free_port(), NEXUS_TOKEN_FILE=str(missing))
    done = subprocess.run([str(ENTRYPOINT)], env=env, capture_output=True, text=True, timeout=10, check=False)
    assert done.returncode == 2 and str(missing) in done.stderr, done.stderr


def test_it_serves_with_the_token_from_a_file_and_the_healthcheck_passes(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n")  # as `echo ... > file` writes it: the newline is not part of it
    port = free_port()
    env = entrypoint_env(tmp_path, port, NEXUS_TOKEN_FILE=str(secret))
    base = f"http://127.0.0.1:{port}"
    assert healthcheck(env).returncode == 1  # nothing answers yet

    with running([str(ENTRYPOINT)], env=env, log=tmp_path / "serve.log") as proc:
        wait_for_http(base + "/healthz", timeout=30, proc=proc)
        check = healthcheck(env)
        assert check.returncode == 0, check.stderr
        assert "healthy" in check.stdout
        assert httpx2.get(base + "/api/servers", timeout=10).status_code == 401
        answer = httpx2.get(base + "/api/servers", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
        assert answer.status_code == 200, answer.text

    failed = healthcheck(env)
    assert failed.returncode == 1 and "unhealthy" in failed.stderr, failed.stderr


def test_other_commands_run_as_given(tmp_path: Path) -> None:
    env = entrypoint_env(tmp_path, free_port())
    done = subprocess.run(
        [str(ENTRYPOINT), "sh", "-c", "echo ran $NEXUS_PORT"],
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    assert done.stdout.strip() == f"ran {env['NEXUS_PORT']}"
