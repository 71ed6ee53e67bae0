"""The sdist and the wheel carry what a user installing from PyPI needs, and the wheel asks
only for what serving needs (the tests' tools are behind the `dev` extra)."""

from __future__ import annotations

import re
import tarfile
import zipfile
from email.parser import Parser

from install.conftest import BuiltPackage
from support.processes import ROOT

STATIC = "mcp_nexus/frontends/dashboard/static"
DEV_ONLY = ("pytest", "playwright", "schemathesis", "mypy", "ruff", "hypothesis", "build", "tiktoken")


def dashboard_files() -> list[str]:
    files = sorted(p.name for p in (ROOT / "src" / STATIC).iterdir() if p.is_file())
    assert "index.html" in files and "app.js" in files, files
    return files


def readme_links() -> set[str]:
    """The repository files README.md links to (docs/*.md, images)."""
    text = (ROOT / "README.md").read_text()
    links = {match.split("#")[0] for match in re.findall(r"\]\(([^)#:]+(?:#[^)]*)?)\)", text)}
    return {link for link in links if not link.startswith(("http", "/"))}


def test_the_sdist_has_the_readme_its_links_the_license_and_the_dashboard(
    built_package: BuiltPackage,
) -> None:
    with tarfile.open(built_package.sdist) as sdist:
        top = sdist.getnames()[0].split("/")[0]
        names = {name.removeprefix(f"{top}/") for name in sdist.getnames()}
    linked = readme_links()
    assert any(link.startswith("docs/") for link in linked), linked  # the check checks something
    for needed in {"README.md", "LICENSE", "pyproject.toml", *linked}:
        assert needed in names, f"{needed} is missing from the sdist"
    for doc in (ROOT / "docs").rglob("*"):
        if doc.is_file() and doc.suffix in (".md", ".png", ".svg"):
            assert str(doc.relative_to(ROOT)) in names, f"{doc.relative_to(ROOT)} is missing from the sdist"
    for name in dashboard_files():
        assert f"src/{STATIC}/{name}" in names
    for needed in (
        "Dockerfile",
        "compose.yaml",
        "docker/entrypoint.sh",
        "src/mcp_nexus/defaults/builtin.json",
    ):
        assert needed in names, f"{needed} is missing from the sdist"
    assert not [name for name in names if "__pycache__" in name or name.startswith("tests/")]


def test_the_wheel_has_the_dashboard_the_license_and_the_metadata(built_package: BuiltPackage) -> None:
    with zipfile.ZipFile(built_package.wheel) as wheel:
        names = set(wheel.namelist())
        (info,) = {name.split("/")[0] for name in names if name.endswith(".dist-info/METADATA")}
        metadata = Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    for name in dashboard_files():
        assert f"{STATIC}/{name}" in names, f"{name} is missing from the wheel"
    assert {"mcp_nexus/py.typed", "mcp_nexus/defaults/builtin.json", f"{info}/licenses/LICENSE"} <= names
    assert metadata["License-Expression"] == "MIT"
    classifiers = metadata.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers and "Typing :: Typed" in classifiers
    assert "nexus = mcp_nexus.cli.app:app" in entry_points


def test_the_wheel_requires_no_test_tool_outside_the_dev_extra(built_package: BuiltPackage) -> None:
    with zipfile.ZipFile(built_package.wheel) as wheel:
        (metadata_name,) = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(wheel.read(metadata_name).decode())
    requirements = metadata.get_all("Requires-Dist") or []
    runtime = [req for req in requirements if "extra ==" not in req]
    dev = [req for req in requirements if 'extra == "dev"' in req]
    assert runtime and dev
    for tool in DEV_ONLY:
        assert not [req for req in runtime if req.lower().startswith(tool)], f"{tool} is a runtime dependency"
        assert [req for req in dev if req.lower().startswith(tool)], f"{tool} is missing from the dev extra"
