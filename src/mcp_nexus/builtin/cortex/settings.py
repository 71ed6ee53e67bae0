"""Where the knowledge folder is when nobody says."""

from __future__ import annotations

import os
from pathlib import Path

from mcp_nexus.paths import data_subdir

DIR_ENV_VAR = "NEXUS_CORTEX_DIR"


def default_knowledge_dir() -> Path:
    """`$NEXUS_CORTEX_DIR` if set, else `<Nexus data dir>/cortex` (see `mcp_nexus.paths`)."""
    configured = os.environ.get(DIR_ENV_VAR)
    if configured:
        return Path(configured).expanduser()
    return data_subdir("cortex")
