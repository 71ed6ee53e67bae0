"""scripts/setup.sh, run for real in a copy of its tree whose programs (pip, apt-get, npm, ...)
are stand-ins that log their arguments: `make run` (`--run-only`) installs the runtime
dependencies only and never touches Debian's packages; `make test` adds the dev extra to the
same venv and installs the Debian packages; each does nothing twice."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from support.processes import ROOT

RECORDER = '#!/bin/sh\necho "{name} $*" >> "$SETUP_CALLS"\n'
# dpkg-query: every package is missing, so the full setup must install them all.
STAND_INS = {"apt-get": RECORDER, "sudo": RECORDER, "npm": RECORDER, "dpkg-query": RECORDER + "exit 1\n"}


def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def setup_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "setup.sh", tree / "scripts" / "setup.sh")
    shutil.copy2(ROOT / "pyproject.toml", tree / "pyproject.toml")
    for name in ("python", "pip"):  # an existing venv: setup.sh only installs into it
        executable(tree / ".venv" / "bin" / name, RECORDER.format(name=f".venv/bin/{name}"))
    # the npm peers and the v1-SDK venv are there already (their steps are not under test)
    (tree / "tools" / "node" / "node_modules").mkdir(parents=True)
    (tree / "tools" / "node" / "package.json").write_text("{}")
    (tree / "tools" / "node" / "node_modules" / ".installed").touch()
    executable(tree / ".venv-v1" / "bin" / "mcp-server-sqlite", "#!/bin/sh\n")
    for name, text in STAND_INS.items():
        executable(tmp_path / "bin" / name, text.format(name=name))
    return tree


def run_setup(tree: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    calls = tree.parent / "calls.log"
    calls.write_text("")
    environment = {
        "PATH": f"{tree.parent / 'bin'}:/usr/bin:/bin",
        "HOME": str(tree.parent),
        "SETUP_CALLS": str(calls),
        **env,
    }
    done = subprocess.run(
        ["bash", str(tree / "scripts" / "setup.sh"), *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done, calls.read_text().splitlines()


def test_make_run_installs_the_runtime_dependencies_only_and_no_debian_package(tmp_path: Path) -> None:
    tree = setup_tree(tmp_path)
    done, calls = run_setup(tree, "--run-only")
    assert done.returncode == 0, done.stderr
    assert calls == [".venv/bin/pip install -q -e ."], calls  # no dev extra, no apt-get, no sudo
    assert (tree / ".venv" / ".installed-run").exists()

    again, calls = run_setup(tree, "--run-only")
    assert again.returncode == 0 and calls == [], calls


def test_make_test_upgrades_the_venv_make_run_made_and_installs_debian_packages(tmp_path: Path) -> None:
    tree = setup_tree(tmp_path)
    run_setup(tree, "--run-only")
    done, calls = run_setup(tree)
    assert done.returncode == 0, done.stderr
    apt_installs = [call for call in calls if call.startswith(("apt-get", "sudo")) and " install " in call]
    assert len(apt_installs) == 1 and "bubblewrap" in apt_installs[0] and "redis-server" in apt_installs[0]
    assert ".venv/bin/pip install -q -e .[dev]" in calls, calls

    # a venv set up by `make test` serves `make run` as it is, and `make test` does nothing twice
    (tree / ".venv" / ".installed-run").unlink()
    _, calls = run_setup(tree, "--run-only")
    assert calls == [], calls
    _, calls = run_setup(tree)
    assert [call for call in calls if "pip" in call] == [], calls


def test_a_changed_pyproject_reinstalls(tmp_path: Path) -> None:
    tree = setup_tree(tmp_path)
    run_setup(tree, "--run-only")
    stamp = tree / ".venv" / ".installed-run"
    os.utime(tree / "pyproject.toml")  # edited now: newer than the stamp
    os.utime(stamp, (stamp.stat().st_mtime - 60,) * 2)
    _, calls = run_setup(tree, "--run-only")
    assert calls == [".venv/bin/pip install -q -e ."], calls


def test_a_python_without_venv_support_is_named_with_the_package_to_install(tmp_path: Path) -> None:
    tree = setup_tree(tmp_path)
    shutil.rmtree(tree / ".venv")
    executable(
        tmp_path / "bin" / "python-without-venv", "#!/bin/sh\necho 'No module named venv' >&2\nexit 1\n"
    )
    done, _ = run_setup(tree, "--run-only", PYTHON="python-without-venv")
    assert done.returncode == 1
    assert "python3-venv" in done.stderr, done.stderr
    assert not (tree / ".venv").exists()  # no half-made venv for the next run to trust
