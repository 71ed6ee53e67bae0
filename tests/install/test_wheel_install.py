"""The built wheel, installed as a user installs it (not editable, not from the work tree), serves
the dashboard and the built-in servers.

Bounded: a fresh `pip install` of the wheel with its ~70 dependencies takes 1.5 min from
PyPI, so the wheel goes in with `--no-deps` into a new venv (no system site-packages) whose
dependencies come from .venv's site-packages through a .pth file. A .pth line only adds the
folder to sys.path, after the venv's own: .venv's editable install of the work tree (its own
.pth hook) is not run, and mcp_nexus is imported from the wheel, as the test checks."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import httpx2

from install.conftest import BuiltPackage
from support.processes import ROOT, child_env, free_port, running, wait_for_http

BUILTIN_TOOLS = ("python_sandbox", "cortex.search_knowledge")


def site_packages(python_root: Path) -> Path:
    relative = Path(sysconfig.get_path("purelib")).relative_to(sysconfig.get_path("data"))
    return python_root / relative


def install_wheel(wheel: Path, into: Path) -> Path:
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(into)
    python = into / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            str(wheel),
        ],
        check=True,
        timeout=60,
        capture_output=True,
    )
    (site_packages(into) / "nexus_test_dependencies.pth").write_text(f"{site_packages(ROOT / '.venv')}\n")
    return into / "bin"


def test_the_installed_wheel_serves_the_dashboard_and_the_builtins(
    built_package: BuiltPackage, tmp_path: Path
) -> None:
    bin_dir = install_wheel(built_package.wheel, tmp_path / "venv")
    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import mcp_nexus; print(mcp_nexus.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        timeout=30,
    ).stdout.strip()
    assert where.startswith(str(tmp_path / "venv")), f"mcp_nexus came from {where}, not the installed wheel"

    env = {name: value for name, value in child_env().items() if not name.startswith(("NEXUS_", "PYTHON"))}
    env["NEXUS_DATA_DIR"] = str(tmp_path / "data")
    port = free_port()
    log = tmp_path / "serve.log"
    with running(
        [str(bin_dir / "nexus"), "serve", "--port", str(port), "--no-watch"], env=env, log=log, cwd=tmp_path
    ) as proc:
        base = f"http://127.0.0.1:{port}"
        wait_for_http(base + "/api/servers", timeout=30, proc=proc)
        page = httpx2.get(base + "/", timeout=10)
        assert page.status_code == 200 and "/ui/static/app.js" in page.text, page.text[:500]
        script = httpx2.get(base + "/ui/static/app.js", timeout=10)
        assert script.status_code == 200
        with zipfile.ZipFile(built_package.wheel) as wheel:
            assert script.content == wheel.read("mcp_nexus/frontends/dashboard/static/app.js")
        tools = {row["name"] for row in httpx2.get(base + "/api/tools", timeout=10).json()["tools"]}
        for name in BUILTIN_TOOLS:
            assert name in tools, sorted(tools)
