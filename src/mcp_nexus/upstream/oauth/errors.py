"""Why an OAuth-protected server cannot be used now."""

from __future__ import annotations


def login_command(server: str) -> str:
    return f"nexus auth login {server}"


class AuthorizationRequired(Exception):
    """The server needs an operator's login (no stored login, a refused refresh, a wider scope)."""

    def __init__(self, server: str, why: str) -> None:
        self.server = server
        self.why = why
        super().__init__(f"server {server!r} needs an OAuth login ({why}): run `{login_command(server)}`")


class LoginFailed(Exception):
    """A login did not complete (the authorization server refused, the user denied, it timed out)."""


class ClientForgotten(AuthorizationRequired):
    """A login found its stored client unknown to the authorization server (provider.py): it
    drops the registration and registers anew, instead of sending a browser to "client not found"."""

    def __init__(self, server: str) -> None:
        super().__init__(server, "the authorization server no longer knows the registered client")
