"""How python_sandbox reads a call's code: the file names it mentions, and whether it uses the data."""

from __future__ import annotations

from mcp_nexus.pipeline.sandbox_files import named_files, reads_data


def test_names_are_found_with_or_without_a_path() -> None:
    a, b = "tool_output_" + "a" * 32 + ".json", "tool_output_" + "b" * 32 + ".json"
    code = f"x = open('/data/{a}')\ny = open(\"{b}\")\nz = '/app/storage/sandbox_data/{a}'"
    assert named_files(code) == [a, b]
    assert named_files("print(data)") == []


def test_reading_data_is_told_from_the_codes_own_variables() -> None:
    assert reads_data("print(len(data))")
    assert reads_data("for name, rows in files.items(): print(name)")
    assert reads_data("data = data[0]\nprint(data)")  # reads before it assigns
    assert reads_data("import os\nprint(os.listdir('/data'))")
    assert reads_data("import glob\nprint(glob.glob('/data/*.json'))")
    assert not reads_data("data = [1, 2]\nprint(sum(data))")
    assert not reads_data("def f(data):\n    return data\nprint(f(3))")
    assert not reads_data("print(6 * 7)")
    assert not reads_data("print(data")  # a syntax error is the sandbox's to report
