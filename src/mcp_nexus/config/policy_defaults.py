"""The governance values in force when no level of the config sets a key (docs/GOVERNANCE.md).

One table, read by the policy resolver at call time and by `nexus config check` to show
what is in force instead of `null`.
"""

from __future__ import annotations

from typing import Any

DEFAULT_CACHE_TTL = 0.0
DEFAULT_RATE_LIMIT = "5/second"
DEFAULT_OFFLOAD_THRESHOLD = 5120
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 2

POLICY_DEFAULTS: dict[str, Any] = {
    "cache_ttl": DEFAULT_CACHE_TTL,
    "rate_limit": DEFAULT_RATE_LIMIT,
    "offload_threshold": DEFAULT_OFFLOAD_THRESHOLD,
    "max_result_bytes": None,
    "timeout": DEFAULT_TIMEOUT,
    "retries": DEFAULT_RETRIES,
    "cache_scope": None,  # by caller when the call carries the caller's own credentials, else shared
}
