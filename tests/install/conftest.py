"""The package as it ships: an sdist and a wheel built once per test process from a copy of the
work tree (so a build never writes into the tree other tests are reading)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.processes import ROOT

# What the sdist is built from: the files MANIFEST.in and pyproject.toml may name.
SOURCE_FILES = (
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "MANIFEST.in",
    "Dockerfile",
    "compose.yaml",
    ".dockerignore",
)
SOURCE_FOLDERS = ("src", "docs", "docker")
BUILD_TIMEOUT_S = 60


@dataclass(frozen=True)
class BuiltPackage:
    sdist: Path
    wheel: Path


def copy_of_the_tree(into: Path) -> Path:
    into.mkdir()
    for name in SOURCE_FILES:
        shutil.copy2(ROOT / name, into / name)
    for name in SOURCE_FOLDERS:
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return into


@pytest.fixture(scope="session")
def built_package(tmp_path_factory: pytest.TempPathFactory) -> BuiltPackage:
    """`python -m build` (sdist, then the wheel from the sdist, as PyPI's users get them), without
    build isolation: the dev extra brings setuptools and build, so nothing is downloaded."""
    work = tmp_path_factory.mktemp("package")
    tree = copy_of_the_tree(work / "tree")
    dist = work / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(tree)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"python -m build failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    return BuiltPackage(sdist, wheel)
