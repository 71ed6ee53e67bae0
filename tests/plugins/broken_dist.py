"""A plugin distribution that is broken on purpose, installed only for one test: a dist-info folder
in tmp_path, found by `importlib.metadata` through PYTHONPATH like any installed distribution."""

from __future__ import annotations

from pathlib import Path


def broken_plugin(folder: Path) -> Path:
    """Entry points of `broken-plugin` 0.3: a step whose module raises on import, and a transport
    that names an object that is no TransportSpec. Returns the folder to put on PYTHONPATH."""
    folder.mkdir(parents=True, exist_ok=True)
    info = folder / "broken_plugin-0.3.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(
        "[mcp_nexus.steps]\nexplodes = broken_plugin_boom:STEP\n\n"
        "[mcp_nexus.transports]\nnot_a_spec = broken_plugin_wrong:TRANSPORT\n"
    )
    (folder / "broken_plugin_boom.py").write_text('raise RuntimeError("the plugin module fails on import")\n')
    (folder / "broken_plugin_wrong.py").write_text('TRANSPORT = "a string, not a TransportSpec"\n')
    return folder
