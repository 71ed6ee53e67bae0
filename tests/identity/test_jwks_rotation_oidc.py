"""An unknown key id: the issuer's keys are fetched again (after a rotation the new key is found),
but at most once per `jwks_refresh_interval`, whatever kids requests make up."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest
import pytest_asyncio
from oidc_peer import ACCEPT, Idp, initialize, running_idp

from lifecycle.faults import document, faulty
from mcp_nexus.config.load import config_from_document
from mcp_nexus.runtime import Runtime, RuntimeOptions
from support.processes import free_port

REFRESH_INTERVAL = 2.5  # well above what the refused requests take


@pytest.fixture
def rotating_idp(tmp_path: Path) -> Iterator[Idp]:
    with running_idp(tmp_path) as provider:
        yield provider


@pytest_asyncio.fixture
async def gateway(rotating_idp: Idp) -> AsyncIterator[tuple[Runtime, str]]:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    auth = {"resource": resource, "issuer": rotating_idp.issuer, "jwks_refresh_interval": REFRESH_INTERVAL}
    config, _ = config_from_document(document({"f": faulty("f")}, port=port, auth=auth))
    async with Runtime(config, RuntimeOptions(bridge=False, watch=False, wait_ready=True)) as runtime:
        yield runtime, resource


def with_kid(token: str, kid: str) -> str:
    header, payload, signature = token.split(".")
    fields = {**json.loads(base64.urlsafe_b64decode(header + "==")), "kid": kid}
    forged = base64.urlsafe_b64encode(json.dumps(fields).encode()).rstrip(b"=").decode()
    return f"{forged}.{payload}.{signature}"


async def test_a_rotated_key_is_fetched_and_made_up_kids_are_bounded(
    gateway: tuple[Runtime, str], rotating_idp: Idp
) -> None:
    runtime, url = gateway
    status = runtime.gateway.status_providers["auth"]

    async def post(token: str) -> httpx2.Response:
        async with httpx2.AsyncClient(timeout=10) as client:
            return await client.post(
                url, headers={**ACCEPT, "Authorization": f"Bearer {token}"}, json=initialize()
            )

    assert (await post(rotating_idp.token("alice", resource=url))).status_code == 200
    assert status()["jwks_fetches"] == 1

    await asyncio.sleep(REFRESH_INTERVAL)  # the next unknown kid may cause a fetch again
    new_kid = rotating_idp.rotate()
    rotated = rotating_idp.token("alice", resource=url)
    assert json.loads(base64.urlsafe_b64decode(rotated.split(".")[0] + "=="))["kid"] == new_kid
    fetched_by = time.monotonic()  # the fetch for the new kid is attempted during the next request
    assert (await post(rotated)).status_code == 200
    assert status()["jwks_fetches"] == 2

    # Made-up key ids right after (well within the interval): refused, and no fetch for any of them within the interval.
    for n in range(3):
        answer = await post(with_kid(rotated, f"made-up-{n}"))
        assert answer.status_code == 401
        assert answer.json() == {
            "error": "invalid_token",
            "error_description": f"the token's signing key (kid 'made-up-{n}') is not one of the issuer's",
        }
    # At most one fetch per interval: none unless the three requests took longer than the interval
    # (on a loaded runner they once did, and the third made-up kid was rightly allowed a fetch).
    intervals = int((time.monotonic() - fetched_by) // REFRESH_INTERVAL)
    assert status()["jwks_fetches"] <= 2 + intervals, (status(), intervals)
