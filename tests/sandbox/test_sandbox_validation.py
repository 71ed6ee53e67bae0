"""Bad requests are refused before any process starts, with a message that names the problem."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_nexus.sandbox import Sandbox, SandboxError, SandboxInputError, SandboxRequest


@pytest.fixture
def box(data_dir: Path) -> Sandbox:
    # No backend at all: validation must fail first, whatever the machine offers.
    return Sandbox(data_dir, backends=[])


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("../secret.txt", "not a path"),
        ("sub/devices.json", "not a path"),
        ("/etc/passwd", "not a path"),
        ("..", "not allowed"),
        (".", "not allowed"),
        (".hidden.json", "not allowed"),
        ("", "non-empty"),
        ("nul\x00.json", "not a path"),
        ("missing.json", "does not exist"),
    ],
)
async def test_bad_file_names_are_refused(box: Sandbox, name: str, message: str) -> None:
    with pytest.raises(SandboxInputError, match=message):
        await box.run(SandboxRequest("print(data)", [name]))


async def test_symlink_in_the_data_folder_is_refused(box: Sandbox, data_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("s3cret")
    os.symlink(tmp_path / "secret.txt", data_dir / "link.json")
    with pytest.raises(SandboxInputError, match="not a regular file"):
        await box.run(SandboxRequest("print(data)", ["link.json"]))


async def test_folder_in_the_data_folder_is_refused(box: Sandbox, data_dir: Path) -> None:
    (data_dir / "folder.json").mkdir()
    with pytest.raises(SandboxInputError, match="not a regular file"):
        await box.run(SandboxRequest("print(data)", ["folder.json"]))


async def test_non_string_file_name_is_refused(box: Sandbox) -> None:
    with pytest.raises(SandboxInputError, match="non-empty strings"):
        await box.run(SandboxRequest("print(data)", [42]))  # type: ignore[list-item]


async def test_files_must_be_a_list(box: Sandbox) -> None:
    with pytest.raises(SandboxInputError, match="must be a list"):
        await box.run(SandboxRequest("print(data)", "devices.json"))  # type: ignore[arg-type]


async def test_empty_code_is_refused(box: Sandbox) -> None:
    with pytest.raises(SandboxInputError, match="code is empty"):
        await box.run(SandboxRequest("   \n"))


async def test_huge_code_is_refused(box: Sandbox) -> None:
    with pytest.raises(SandboxInputError, match="larger than"):
        await box.run(SandboxRequest("#" * 300_000))


async def test_missing_data_folder_is_reported(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="does not exist"):
        await Sandbox(tmp_path / "nowhere", backends=[]).run(SandboxRequest("print(1)"))


def test_bad_settings_are_refused(data_dir: Path) -> None:
    with pytest.raises(ValueError, match="max_concurrent"):
        Sandbox(data_dir, max_concurrent=0)
    with pytest.raises(ValueError, match="timeout_s"):
        Sandbox(data_dir, timeout_s=0)
    with pytest.raises(ValueError, match="output_cap_bytes"):
        Sandbox(data_dir, output_cap_bytes=0)
