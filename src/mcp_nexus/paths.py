"""The one folder everything Nexus writes lives under: offloaded results, Cortex knowledge, ...

`$NEXUS_DATA_DIR` when set, else the platform's user data folder named `mcp-nexus`
(`~/.local/share/mcp-nexus` on Linux). Every part that needs a folder of its own asks for a
subfolder here, so an operator has one place to back up, clean or mount.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import platformdirs

logger = logging.getLogger(__name__)

APP_NAME = "mcp-nexus"
DATA_DIR_ENV = "NEXUS_DATA_DIR"

# Folder names earlier versions used for some parts; their data moves here on first use.
_LEGACY_APP_NAMES = ("nexus",)


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The folder Nexus writes to (not created here: each part creates what it needs, with its own mode)."""
    configured = (os.environ if env is None else env).get(DATA_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME))


def data_subdir(name: str, env: Mapping[str, str] | None = None) -> Path:
    """`<data dir>/<name>`; a folder of that name left by an earlier version is moved here first.

    Moving (a rename on the same disk) rather than reading the old place keeps one folder
    name for everything; if the move fails, the old folder is used and the reason logged, so
    no data is ever left behind silently.
    """
    target = data_dir(env) / name
    chosen_by_operator = bool((os.environ if env is None else env).get(DATA_DIR_ENV))
    if target.exists() or chosen_by_operator:
        return target
    for legacy_name in _LEGACY_APP_NAMES:
        legacy = Path(platformdirs.user_data_dir(legacy_name)) / name
        if not legacy.is_dir():
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            legacy.rename(target)
        except OSError as exc:
            logger.warning("cannot move %s to %s (%s): using the old folder", legacy, target, exc)
            return legacy
        logger.warning("moved %s to %s (Nexus keeps all its data under one folder)", legacy, target)
        return target
    return target
