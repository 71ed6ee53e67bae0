"""Where the knowledge folder is when nobody says."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DIR_ENV_VAR = "NEXUS_CORTEX_DIR"


def default_knowledge_dir() -> Path:
    """`$NEXUS_CORTEX_DIR` if set, else `<user data dir>/nexus/cortex`."""
    configured = os.environ.get(DIR_ENV_VAR)
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_data_dir("nexus")) / "cortex"
