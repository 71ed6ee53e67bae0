"""python_sandbox: run untrusted Python over the offloaded data, isolated by bubblewrap.

Inside the sandbox the user's code finds:
- `data`: the parsed JSON of the single file named in `files` (its text if it is not JSON),
  a dict {name: parsed} when several files are named, None when none;
- `files`: always the dict {name: parsed};
- `/data/<name>`: the files themselves, read-only (`DATA_DIR` holds "/data");
- `json` already imported. The answer is whatever the code prints to stdout.
"""

from mcp_nexus.sandbox.backend import SandboxBackend
from mcp_nexus.sandbox.bwrap import BwrapBackend
from mcp_nexus.sandbox.errors import SandboxError, SandboxInputError, SandboxUnavailableError
from mcp_nexus.sandbox.models import ProbeResult, ResourceLimits, SandboxRequest, SandboxResult
from mcp_nexus.sandbox.sandbox import Sandbox, SandboxStatus
from mcp_nexus.sandbox.unsandboxed import UnsandboxedBackend

__all__ = [
    "BwrapBackend",
    "ProbeResult",
    "ResourceLimits",
    "Sandbox",
    "SandboxBackend",
    "SandboxError",
    "SandboxInputError",
    "SandboxRequest",
    "SandboxResult",
    "SandboxStatus",
    "SandboxUnavailableError",
    "UnsandboxedBackend",
]
