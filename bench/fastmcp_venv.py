"""A throwaway venv holding fastmcp, the peer bench/peers.py measures Nexus against.

    .venv/bin/python bench/fastmcp_venv.py [--version 4.1.6]   # prints the venv's python

fastmcp is a peer to measure, never a dependency of Nexus: it lives in its own venv
(bench/.venv-peers, gitignored) with whatever MCP SDK it needs, and runs as its own
process, so it never touches the project's .venv.

Some fastmcp releases pin a dependency newer than the registry serves (4.1.6 asks for a
certifi from the future), so a plain `pip install fastmcp==V` can fail. Then the
dependencies are read from the wheels' metadata, installed with those pins relaxed, and
fastmcp itself goes in with `--no-deps`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

VENV = Path(__file__).resolve().parent / ".venv-peers"
DEFAULT_VERSION = "4.1.6"
# Pins the registry cannot satisfy; installed at whatever version it has.
RELAXED = {"certifi"}
# The fastmcp distributions of one release: the meta package and the one holding the code.
PACKAGES = ("fastmcp", "fastmcp-slim")


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", "-q", *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def _installed_version(python: Path) -> str | None:
    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('fastmcp'))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return probe.stdout.strip() if probe.returncode == 0 else None


def _requirements_of(wheel: Path, extras: set[str]) -> list[Requirement]:
    """Requires-Dist of a wheel whose markers hold for this interpreter and the given extras."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        lines = archive.read(name).decode().splitlines()
    wanted = []
    for line in lines:
        if not line.startswith("Requires-Dist:"):
            continue
        requirement = Requirement(line.split(":", 1)[1].strip())
        environments: list[dict[str, str]] = [
            {**default_environment(), "extra": extra}  # type: ignore[dict-item]
            for extra in extras | {""}
        ]
        if requirement.marker is None or any(requirement.marker.evaluate(env) for env in environments):
            wanted.append(requirement)
    return wanted


def _dependencies(python: Path, version: str) -> list[str]:
    """Every dependency of fastmcp==version (and fastmcp-slim with the extras it asks for), RELAXED unpinned."""
    with tempfile.TemporaryDirectory() as tmp:
        pins = [f"{package}=={version}" for package in PACKAGES]
        done = _pip(python, "download", "--no-deps", "-d", tmp, *pins)
        if done.returncode != 0:
            raise SystemExit(f"cannot download {' '.join(pins)}:\n{done.stderr}")
        wheels = {w.name.split("-")[0].replace("_", "-"): w for w in Path(tmp).glob("*.whl")}
        top = _requirements_of(wheels["fastmcp"], set())
        extras = {extra for r in top if r.name == "fastmcp-slim" for extra in r.extras}
        found = _requirements_of(wheels["fastmcp-slim"], extras)
    specs = []
    for requirement in found:
        if requirement.name in PACKAGES:
            continue
        if requirement.name in RELAXED:
            specs.append(requirement.name)
        else:
            requirement.marker = None  # already evaluated above
            specs.append(str(requirement))
    return specs


def ensure_fastmcp(version: str = DEFAULT_VERSION, venv: Path = VENV) -> Path:
    """The python of a venv with fastmcp==version, creating or repairing it as needed."""
    python = venv / "bin" / "python"
    if python.exists() and _installed_version(python) == version:
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    print(f"installing fastmcp=={version} into {venv} ...", file=sys.stderr, flush=True)
    plain = _pip(python, "install", f"fastmcp=={version}")
    if plain.returncode != 0:
        print(
            f"plain install failed (pins the registry cannot meet); relaxing {sorted(RELAXED)} "
            "and installing fastmcp with --no-deps",
            file=sys.stderr,
            flush=True,
        )
        dependencies = _pip(python, "install", *_dependencies(python, version))
        if dependencies.returncode != 0:
            raise SystemExit(f"installing fastmcp's dependencies failed:\n{dependencies.stderr}")
        itself = _pip(python, "install", "--no-deps", *(f"{p}=={version}" for p in PACKAGES))
        if itself.returncode != 0:
            raise SystemExit(f"installing fastmcp=={version} --no-deps failed:\n{itself.stderr}")
    if _installed_version(python) != version:
        raise SystemExit(f"fastmcp=={version} is not importable in {venv} after installing it")
    return python


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", default=DEFAULT_VERSION, help="fastmcp release to install")
    print(ensure_fastmcp(parser.parse_args().version))


if __name__ == "__main__":
    main()
