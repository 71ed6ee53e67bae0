"""The sandbox's side of the tool channel (code mode): runs inside python_sandbox, next to the code.

bootstrap.py compiles this source (handed over as an argument, like bootstrap.py itself) and
puts `Channel(fd).names()` into the code's namespace. So it must only use the standard library
and syntax every supported system Python (3.8+) understands, and it trusts nothing: the code
can write to the descriptor itself, and the gateway's side (pipeline/code_channel.py) checks
every line it receives.

Protocol: one JSON object per line each way. The code asks `{"id", "op", ...}` with op `start`
(the run's input values), `list` (the tools the caller can see), `find` (the gateway's tool
search), `call` (one tool call) or `result` (a top-level `return` value); the gateway answers
`{"id", "ok": true, "value"}` or `{"id", "ok": false, "kind", "error"}`. One request at a time.
"""

import json
import os
import threading

_READ_CHUNK = 65536


class ToolError(Exception):
    """A tool call from code failed: the tool answered with an error, or the gateway refused it.

    `kind` says which ("tool_error", "invalid_arguments", "unknown_tool", "timeout", "refused",
    "limit", ...); the message is the tool's or the gateway's own text.
    """

    def __init__(self, message, kind="tool_error"):
        Exception.__init__(self, message)
        self.kind = kind


class RateLimitError(ToolError):
    """The call was refused by a rate limit; the message is the gateway's SYSTEM_ALERT."""


class ChannelClosed(ToolError):
    """The gateway closed the tool channel (the run ended or broke a channel rule)."""


def _error_for(kind, message):
    if kind == "rate_limited":
        return RateLimitError(message, kind)
    if kind == "closed":
        return ChannelClosed(message, kind)
    return ToolError(message, kind)


class Channel:
    """JSON lines over one descriptor; one request in flight (a lock serialises threads)."""

    def __init__(self, fd):
        self.fd = fd
        self.buffer = b""
        self.next_id = 0
        self.lock = threading.Lock()
        self.closed_reason = None
        self._tools = None

    def _send(self, message):
        data = (json.dumps(message, ensure_ascii=False, default=str) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def _read_line(self):
        while b"\n" not in self.buffer:
            chunk = os.read(self.fd, _READ_CHUNK)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def request(self, op, **fields):
        """Send one request and return its answer's value, or raise the ToolError it carries."""
        with self.lock:
            if self.closed_reason is not None:
                raise ChannelClosed(self.closed_reason, "closed")
            self.next_id += 1
            wanted = self.next_id
            message = {"id": wanted, "op": op}
            message.update(fields)
            try:
                self._send(message)
            except OSError as error:
                self.closed_reason = f"the gateway closed the tool channel ({error.strerror or error})"
                raise ChannelClosed(self.closed_reason, "closed") from None
            except (ValueError, TypeError) as error:
                raise ToolError(f"the request cannot be sent as JSON: {error}", "invalid_arguments") from None
            while True:
                try:
                    line = self._read_line()
                except OSError as failure:
                    line = None
                    self.closed_reason = f"the tool channel failed: {failure}"
                if line is None:
                    self.closed_reason = self.closed_reason or "the gateway closed the tool channel"
                    raise ChannelClosed(self.closed_reason, "closed")
                answer = json.loads(line.decode("utf-8", "replace"))
                if answer.get("id") not in (wanted, None):
                    continue  # an answer to a request this client gave up on
                if answer.get("ok"):
                    return answer.get("value")
                refusal = _error_for(answer.get("kind", "tool_error"), answer.get("error", "failed"))
                if answer.get("kind") == "closed":
                    self.closed_reason = str(refusal)
                raise refusal

    # -- what the code calls -------------------------------------------------------------------

    def call_tool(self, name, arguments=None):
        """Call a gateway tool by its name, e.g. call_tool("git.git_log", {"repo_path": "."}).

        Returns its structured content when it has some, else its text, JSON-decoded when it is
        JSON. Raises ToolError (RateLimitError for a rate limit) with the tool's message.
        """
        if not isinstance(name, str) or not name:
            raise ToolError(f"call_tool needs the tool's name (a string), got {name!r}", "invalid_arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolError(
                f"call_tool's arguments must be a dict, got {type(arguments).__name__}", "invalid_arguments"
            )
        return self.request("call", name=name, arguments=arguments)

    def find_tools(self, query, limit=10):
        """The gateway's tool search: a list of {name, description, call, input_schema}, best first;
        `call` is how to call the tool from code, e.g. "tools.git.git_log(repo_path=...)"."""
        return self.request("find", query=query, limit=limit)

    def send_result(self, value):
        self.request("result", value=value)

    def tool_list(self):
        if self._tools is None:
            self._tools = self.request("list")
        return self._tools

    def names(self):
        """What the code's namespace gets."""
        return {
            "call_tool": self.call_tool,
            "find_tools": self.find_tools,
            "tools": Tools(self),
            "ToolError": ToolError,
            "RateLimitError": RateLimitError,
            "input": self.request("start"),
        }


def _stub(channel, entry):
    name = entry["name"]

    def stub(**arguments):
        return channel.call_tool(name, arguments)

    stub.__name__ = str(entry["path"][-1])
    stub.__qualname__ = "tools." + ".".join(entry["path"])
    properties = (entry.get("input_schema") or {}).get("properties") or {}
    required = (entry.get("input_schema") or {}).get("required") or []
    shown = ", ".join(
        arg if arg in required else arg + "=..." for arg in list(properties)[:20] if isinstance(arg, str)
    )
    description = entry.get("description") or ""
    stub.__doc__ = f"{description}\n\n{stub.__qualname__}({shown})  # gateway tool {name!r}"
    return stub


class Namespace:
    """One namespace of tools (`tools.git`): attributes are the stubs."""

    def __init__(self, path, members):
        self._path = path
        self.__dict__.update(members)

    def __dir__(self):
        return sorted(key for key in self.__dict__ if not key.startswith("_"))

    def __repr__(self):
        return f"<tools.{self._path}: {', '.join(self.__dir__())}>"

    def __getattr__(self, attribute):
        raise AttributeError(
            f"tools.{self._path} has no tool {attribute!r}; it has: {', '.join(self.__dir__())}"
        )


class Tools:
    """`tools.<namespace>.<tool>(**arguments)`: a stub per tool the caller can see, listed on first use."""

    def __init__(self, channel):
        self._channel = channel
        self._members = None

    def _load(self):
        if self._members is None:
            grouped: dict = {}
            members = {}
            for entry in self._channel.tool_list():
                path = entry["path"]
                if len(path) == 1:
                    members[path[0]] = _stub(self._channel, entry)
                else:
                    grouped.setdefault(path[0], {})[path[1]] = _stub(self._channel, entry)
            for namespace, stubs in grouped.items():
                members.setdefault(namespace, Namespace(namespace, stubs))
            self._members = members
        return self._members

    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        members = self._load()
        if attribute not in members:
            raise AttributeError(
                f"no tool or namespace {attribute!r} under tools; there are: "
                f"{', '.join(sorted(members))} (find_tools(query) searches them)"
            )
        return members[attribute]

    def __dir__(self):
        return sorted(self._load())

    def __repr__(self):
        return "<tools: " + ", ".join(self.__dir__()) + ">"
