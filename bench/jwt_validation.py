"""Cost per request of checking an access token (gateway.auth), with the issuer's keys cached.

    .venv/bin/python bench/jwt_validation.py [--calls 20000] [--runs 5] [--alg RS256]

The token is a real RFC 9068 JWT signed with a fresh key; the keys are fetched once through
the gateway's own JwksCache (the JWKS served by an in-memory transport: no network in the
measured loop). Measured per call, median of the runs:
  signature alone (floor)  the RSA/ECDSA check by itself (cryptography): this machine's floor
  verify, no token cache   header, key lookup, signature and claims (iss, aud, exp, nbf): every
                           request of a client whose token is new to the gateway
  verify, token cached     the same token again (VerifiedTokens): every later request with it
  audit enqueue            what the audit log adds to a call on its path (one queued record)
Target (issue 26): < 50 µs per call for validation with cached keys.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import time
from typing import Any

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from mcp_nexus.audit.writer import AuditLog
from mcp_nexus.config.audit import AuditSettings
from mcp_nexus.config.identity import ResourceServerSettings
from mcp_nexus.events import EventBus
from mcp_nexus.identity.jwks import JwksCache
from mcp_nexus.identity.jwt_verifier import JwtVerifier
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.call_finished import CallFinished

ISSUER = "https://idp.example"
RESOURCE = "https://nexus.example/mcp"


def key_and_jwks(alg: str) -> tuple[Any, dict[str, Any]]:
    private: Any = (
        ec.generate_private_key(ec.SECP256R1())
        if alg.startswith("ES")
        else rsa.generate_private_key(65537, 2048)
    )
    public = json.loads(jwt.algorithms.get_default_algorithms()[alg].to_jwk(private.public_key()))
    return private, {"keys": [{**public, "kid": "k1", "alg": alg, "use": "sig"}]}


async def per_call(calls: int, runs: int, work: Any) -> float:
    results = []
    for _ in range(runs):
        started = time.perf_counter()
        for _ in range(calls):
            await work()
        results.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(results)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--alg", default="RS256", choices=["RS256", "ES256", "PS256"])
    args = parser.parse_args()
    private, jwks = key_and_jwks(args.alg)
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "client_id": "ide", "scope": "mcp:tools"}
    token = jwt.encode(
        {**claims, "iat": now, "exp": now + 3600},
        private,
        algorithm=args.alg,
        headers={"kid": "k1", "typ": "at+jwt"},
    )
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=jwks))
    async with httpx2.AsyncClient(transport=transport) as client:

        async def jwks_uri() -> str:
            return f"{ISSUER}/jwks"

        keys = JwksCache(client, jwks_uri)
        settings = ResourceServerSettings(resource=RESOURCE, issuer=ISSUER, algorithms=[args.alg])
        uncached = JwtVerifier(settings.model_copy(update={"token_cache_entries": 0}), keys)
        cached = JwtVerifier(settings, keys)
        assert (await uncached.verify(token)).key == "user:alice" and keys.fetches == 1

        async def verify_uncached() -> None:
            await uncached.verify(token)

        async def verify_cached() -> None:
            await cached.verify(token)

        signing_input, _, signature = token.rpartition(".")
        algorithm = jwt.get_algorithm_by_name(args.alg)
        raw_signature = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))

        async def signature_alone() -> None:
            assert algorithm.verify(signing_input.encode(), private.public_key(), raw_signature)

        rows = [
            ("signature alone (floor)", await per_call(args.calls, args.runs, signature_alone)),
            ("verify, no token cache", await per_call(args.calls, args.runs, verify_uncached)),
            ("verify, token cached", await per_call(args.calls, args.runs, verify_cached)),
        ]
        assert keys.fetches == 1
    bus = EventBus()
    audit = AuditLog(AuditSettings(queue_max=args.calls * args.runs + 1), bus)
    audit._enqueue  # noqa: B018 - the subscriber itself: the writer is not started (no disk in the loop)
    event = CallFinished("f.echo", Caller("http"), 0.001, None)

    async def enqueue() -> None:
        audit._enqueue(event)

    rows.append(("audit enqueue", await per_call(args.calls, args.runs, enqueue)))
    print(f"{'what':<26}{'µs/call':>10}   ({args.alg}, {args.calls} calls x {args.runs} runs, median)")
    for name, micros in rows:
        print(f"{name:<26}{micros:>10.2f}")


if __name__ == "__main__":
    asyncio.run(main())
