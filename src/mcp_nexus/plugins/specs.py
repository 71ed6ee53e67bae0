"""What a plugin declares: the objects an entry point of each group must name.

Three entry-point groups (docs/PLUGINS.md):

- `mcp_nexus.transports`: a `TransportSpec`, so `"transport": "<name>"` in a server entry validates
  like a built-in and connects through the plugin's `Session` class;
- `mcp_nexus.steps`: a `StepSpec`, a pipeline step with its config block and its place in the chain;
- `mcp_nexus.servers`: an embedded MCP server by name (a server object or a factory returning one),
  used as `{"transport": "embedded", "module": "<name>"}`.

Nexus's own transports, steps and servers are declared in its pyproject.toml the same way.
This module imports nothing heavy: the config loader reads it while validating.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pydantic import BaseModel

# The registry sits below config and upstream (both ask it for transports), so its specs name
# the higher-layer types they carry only in words: a `Session` subclass, a step factory taking
# a `StepContext` (pipeline/step_context.py) and returning a `Middleware`. Where they are used
# (upstream/session_types.py, pipeline/governance.py) they are typed again.
Session = Any
StepFactory = Callable[[Any], Any]

TransportKind = Literal["process", "network", "in_process"]
"""How a lost connection is brought back: a process is restarted, a network link reconnected."""

Chain = Literal["tools", "requests"]
"""tools/call, or the other requests (resources/read, prompts/get, completion/complete)."""


def import_target(target: str) -> Any:
    """The object `package.module:attribute` names (an import error propagates to the caller)."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected 'package.module:attribute', got {target!r}")
    return getattr(importlib.import_module(module_name), attribute)


@dataclass(frozen=True)
class TransportSpec:
    """An upstream transport: how Nexus reaches a server of this kind.

    `session` is a `Session` subclass, or `"package.module:Class"` imported at the first connect
    (so validating a config never imports a transport's client library). `config_model` checks
    the entry's fields for this transport: each of its fields is read from the server entry
    (a field Nexus knows too, like `url` or `headers`, from that key; any other from an extra key
    of the entry, which Nexus keeps in `options`); errors name those fields. Built-ins leave it
    None: their fields are checked by `ServerConfig` itself.
    """

    name: str
    session: type[Session] | str
    config_model: type[BaseModel] | None = None
    kind: TransportKind = "network"
    priority: int = 50  # the default `priority` of its servers (docs/CONFIG.md)
    url_schemes: tuple[str, ...] = ()  # a bare `url` with one of these schemes means this transport
    description: str = ""

    def session_class(self) -> type[Session]:
        if isinstance(self.session, str):
            found: type[Session] = import_target(self.session)
            return found
        return self.session


@dataclass(frozen=True)
class StepSpec:
    """A pipeline step: how to build it, its config block and its place in the chain.

    `build(context)` returns the step (a `Middleware`), or None when the config leaves it out
    (no cost then). `config_model` validates its block, `steps.<name>`, which may be set in
    `gateway`, in a server entry and in a tool's `tool_config` entry: the most specific level
    wins per key, and the step reads the merged block of a call's tool from
    `call.policy.steps[name]`. Every field of `config_model` needs a default.

    `before`/`after` name a step the new one sits directly inside of / outside of; chains are
    listed outermost first: `errors`, `size_limit`, `cache`, `validate`, `rate_limit`, `offload`,
    `retry`, `timeout`, then the route (docs/GOVERNANCE.md). Neither: the innermost, just before
    the route. Built-ins give `order` instead (their place in that list).
    """

    name: str
    build: StepFactory
    config_model: type[BaseModel] | None = None
    before: str | None = None
    after: str | None = None
    chains: tuple[Chain, ...] = ("tools",)
    order: int | None = None  # built-ins only: position in the chain
    description: str = ""


@dataclass(frozen=True)
class LoadedPlugin:
    """One entry point as `nexus plugins` shows it: where it came from and whether it loaded."""

    group: str
    name: str
    value: str  # "package.module:attribute"
    distribution: str | None
    version: str | None
    error: str | None = None
    builtin: bool = False
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def module(self) -> str:
        return self.value.partition(":")[0]
