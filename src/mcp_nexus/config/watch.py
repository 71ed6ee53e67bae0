"""Hot reload: watch the config file, debounce bursts of writes, validate, apply the diff.

A file that does not load (bad JSON or YAML, an invalid field) is logged with the problem
and ignored: the running config stays in force until a good version is saved.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import watchfiles

from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import load_config
from mcp_nexus.config.schema import NexusConfig


class Reloadable(Protocol):
    """What a watcher applies a new config to (the gateway), seen from below it."""

    async def reload(self, new: NexusConfig) -> Any: ...


logger = logging.getLogger(__name__)

DEFAULT_DEBOUNCE_MS = 300

ConfigAdjust = Callable[[NexusConfig], None]
"""Re-applies what the command line overrode (host, port, token) to a freshly loaded config."""


class ConfigSource:
    """The file a gateway's config comes from, loaded the same way every time."""

    def __init__(self, path: str | Path, adjust: ConfigAdjust | None = None) -> None:
        self.path = Path(path)
        self.adjust = adjust

    def load(self) -> NexusConfig:
        """Load and validate; raises ConfigError naming every problem."""
        config, warnings = load_config(self.path)
        for warning in warnings:
            logger.warning("config %s: %s", self.path, warning)
        if self.adjust is not None:
            self.adjust(config)
        return config

    async def reload(self, gateway: Reloadable) -> Any:
        """Load the file and apply it to `gateway` (ConfigError leaves the gateway as it was)."""
        config = await asyncio.to_thread(self.load)
        return await gateway.reload(config)


class ConfigWatcher:
    """Applies every saved change of `source` to `gateway` until `stop()`."""

    def __init__(
        self, source: ConfigSource, gateway: Reloadable, *, debounce_ms: int = DEFAULT_DEBOUNCE_MS
    ) -> None:
        self.source = source
        self.gateway = gateway
        self.debounce_ms = debounce_ms
        self.reloads = 0  # applied reloads
        self.rejected = 0  # saves that did not load
        self.last_error: str | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self.run(), name="config-watcher")

    async def wait_ready(self, timeout: float = 5.0) -> None:
        """Until the file system watch is in place (tests write right after starting)."""
        await asyncio.wait_for(self._ready.wait(), timeout)

    async def stop(self) -> None:
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                await asyncio.wait_for(task, 5)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()

    async def run(self) -> None:
        # Watch the folder, not the file: editors save by writing a new file and renaming it
        # over the old one, which ends a watch on the file itself.
        path = self.source.path.resolve()
        name = path.name

        def is_our_file(change: watchfiles.Change, changed: str) -> bool:
            return Path(changed).name == name and change != watchfiles.Change.deleted

        logger.info("watching %s for changes", path)
        watch = watchfiles.awatch(
            path.parent,
            watch_filter=is_our_file,
            debounce=self.debounce_ms,
            step=50,
            stop_event=self._stop,
            recursive=False,
            yield_on_timeout=True,
            rust_timeout=200,
        )
        async for changes in watch:
            self._ready.set()
            if changes:
                await self.apply()

    async def apply(self) -> None:
        """Load the file now and apply it; a bad file is logged and changes nothing."""
        try:
            report = await self.source.reload(self.gateway)
        except ConfigError as exc:
            self.rejected += 1
            self.last_error = str(exc)
            logger.error("config change rejected, the running config stays in force:\n%s", exc)
            return
        except Exception as exc:  # a reload bug must not end the watcher
            self.rejected += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            logger.exception("config reload failed; the running config stays in force")
            return
        self.reloads += 1
        self.last_error = None
        logger.info("config %s reloaded: %s", self.source.path, report.summary())
