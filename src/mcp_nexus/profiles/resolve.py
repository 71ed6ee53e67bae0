"""Which profile a caller is in, and the one check every way in passes (Gateway.call_tool and _request).

The profile in force for a caller:

1. the one its way in names (`/mcp/<profile>`, `nexus serve --stdio --profile`, a Xiaozhi
   endpoint's or the envelope server's `profile`, a task's starter's); a name no longer
   configured is an empty view (fail closed);
2. no `profiles:` configured: none, the whole catalog (a single-user gateway is unchanged);
3. a caller with an access token: the first profile, in file order, whose `bind` matches it
   (its `sub`, a group, a scope, its client id), else the profile named `default`, else an
   empty view: a user the operator bound to nothing reaches nothing;
4. a caller without a token: the gateway's own ways in (`api`, `cli`, `executor`: the admin
   API, `nexus call`, which are the operator) the whole catalog; the MCP frontends (stdio,
   HTTP with the static token or on loopback, Xiaozhi) the profile `default` when there is
   one, else the whole catalog (they hold the operator's credential, which opens the admin API).

The gateway binds the caller once as a call enters (`bind`): `Caller.profile` becomes the
profile in force and `Caller.reaches` its predicate, so the code channel, find_tools and the
offload hint read the same answer the gateway enforces. A name outside the view is answered
exactly as an unknown one (suggestions drawn from the view only): a caller cannot tell a
hidden tool from a missing one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from fnmatch import fnmatchcase

import mcp_types as types
from rapidfuzz import process

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.index import ToolIndex
from mcp_nexus.config.profiles import DEFAULT_PROFILE, ProfileConfig
from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.config.tool_search import ToolSearchSettings
from mcp_nexus.errors import NotFoundError, UnknownToolError
from mcp_nexus.identity.principal import Principal
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.profiles.policy import ProfilePolicies
from mcp_nexus.profiles.view import ProfileView

# Callers that are the operator: without an explicit profile they see the whole catalog.
OPERATOR_FRONTENDS = frozenset({"api", "cli", "executor"})


def binds(config: ProfileConfig, principal: Principal) -> bool:
    """The token matches one of the profile's bindings."""
    bind = config.bind
    return (
        (principal.subject is not None and principal.subject in bind.users)
        or any(group in bind.groups for group in principal.groups)
        or any(scope in principal.scopes for scope in bind.scopes)
        or (principal.client_id is not None and principal.client_id in bind.clients)
    )


class Profiles:
    """The configured profiles as views over the live catalog, rebuilt when the config changes."""

    def __init__(self, config: Callable[[], NexusConfig], catalog: Catalog, index: ToolIndex) -> None:
        self._config = config
        self.catalog = catalog
        self.index = index
        self._views: dict[str, ProfileView] = {}
        self._views_of: dict[str, ProfileConfig] | None = None
        self.policies = ProfilePolicies(config)  # each profile's tool_config (policy overrides)
        # One settings object per mode and gateway.tool_search object: listings cache by identity.
        self._search: dict[str, tuple[ToolSearchSettings, ToolSearchSettings]] = {}

    def _tags_of(self, name: str) -> frozenset[str]:
        entry = self.index.get_tool_entry(name)
        return frozenset(entry.tags) if entry is not None else frozenset()

    def view(self, name: str) -> ProfileView:
        """The view of profile `name` (an empty one for a name not configured)."""
        configured = self._config().profiles
        if configured is not self._views_of:  # a reload: views are rebuilt from the new config
            self._views, self._views_of = {}, configured
        found = self._views.get(name)
        if found is None:
            found = self._views[name] = ProfileView(name, configured.get(name), self.catalog, self._tags_of)
        return found

    def name_for(self, caller: Caller) -> str | None:
        """The profile in force for `caller` (None: no profile, the whole catalog); rules in the module doc."""
        if caller.profile is not None:
            return caller.profile
        configured = self._config().profiles
        if not configured:
            return None
        if caller.principal is not None:
            for name, profile in configured.items():
                if binds(profile, caller.principal):
                    return name
            return DEFAULT_PROFILE  # configured or not: not configured is an empty view
        if caller.frontend in OPERATOR_FRONTENDS:
            return None
        return DEFAULT_PROFILE if DEFAULT_PROFILE in configured else None

    def view_for(self, caller: Caller) -> ProfileView | None:
        name = self.name_for(caller)
        return None if name is None else self.view(name)

    def admits(self, profile: str, principal: Principal | None) -> bool:
        """May this caller use an endpoint that names `profile` (`/mcp/<profile>`)?

        A token caller must be bound to it (a profile without bindings is open to every token
        the resource server accepts); a caller without a token holds the operator's credential."""
        config = self._config().profiles.get(profile)
        if config is None:
            return False
        return principal is None or config.bind.empty or binds(config, principal)

    def bind(self, caller: Caller) -> Caller:
        """`caller` with its profile in force and that profile's predicate (unchanged without one)."""
        if caller.reaches is not None:
            return caller  # already bound (an inner call of a chain or of code keeps its caller)
        name = self.name_for(caller)
        if name is None:
            return caller
        view = self.view(name)
        return dataclasses.replace(caller, profile=name, reaches=view.reaches_tool)

    # -- the checks -------------------------------------------------------------------------

    def check_tool(self, caller: Caller, name: str) -> None:
        """Raise the unknown-tool error for a name outside the caller's profile (a bound caller)."""
        if caller.reaches is None or caller.reaches(name):
            return
        visible = [tool for tool in self.catalog.tools if caller.reaches(tool)]
        close = [match for match, _score, _i in process.extract(name, visible, limit=3)]
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise UnknownToolError(f"Unknown tool: {name}{hint}", data={"tool": name, "suggestions": close})

    def check_request(self, caller: Caller, method: str, name: str) -> None:
        """Raise not-found for a resource or prompt outside the caller's profile, as for a missing one."""
        view = self.view_for(caller)
        if view is None:
            return
        if method == "resources/read" and not view.reaches_resource(name):
            raise NotFoundError(f"Resource not found: {name}", data={"uri": name})
        if method == "prompts/get" and not view.reaches_prompt(name):
            raise NotFoundError(f"Unknown prompt: {name}", data={"prompt": name})
        if method == "completion/complete" and not (view.reaches_prompt(name) or _template_in(view, name)):
            raise NotFoundError(f"Unknown reference: {name}", data={"ref": name})

    # -- the lists ----------------------------------------------------------------------------

    def tools(self, caller: Caller, listed: list[types.Tool]) -> list[types.Tool]:
        view = self.view_for(caller)
        return listed if view is None else [tool for tool in listed if view.reaches_tool(tool.name)]

    def resources(self, caller: Caller, listed: list[types.Resource]) -> list[types.Resource]:
        view = self.view_for(caller)
        return listed if view is None else [r for r in listed if view.reaches_resource(str(r.uri))]

    def templates(self, caller: Caller, listed: list[types.ResourceTemplate]) -> list[types.ResourceTemplate]:
        view = self.view_for(caller)
        return listed if view is None else [t for t in listed if _template_in(view, t.uri_template)]

    def prompts(self, caller: Caller, listed: list[types.Prompt]) -> list[types.Prompt]:
        view = self.view_for(caller)
        return listed if view is None else [p for p in listed if view.reaches_prompt(p.name)]

    def search_settings(self, caller: Caller, settings: ToolSearchSettings) -> ToolSearchSettings:
        """gateway.tool_search with the caller's profile's mode in force, when the profile sets one."""
        view = self.view_for(caller)
        mode = None if view is None else view.config.tool_search
        if mode is None:
            return settings
        cached = self._search.get(mode)
        if cached is None or cached[0] is not settings:
            cached = self._search[mode] = (
                settings,
                settings.model_copy(update={"mode": mode, "frontends": {}, "clients": {}}),
            )
        return cached[1]


def _template_in(view: ProfileView, uri_template: str) -> bool:
    """A resource template is in the view when its pattern matches or every server offering it is."""
    if any(fnmatchcase(uri_template, pattern) for pattern in view.config.resources):
        return True
    servers = [
        route.upstream.name for route in view.catalog.templates if route.template.uri_template == uri_template
    ]
    return bool(servers) and all(server in view.config.servers for server in servers)
