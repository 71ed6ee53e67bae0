"""A per-user server's questions reach the user whose session asks, never another user in flight.

A handshake-era server asks mid-call (elicitation) over the session the call came on, and the
protocol links the question to no call: the gateway asks the newest caller in flight on that
server. Each user of a per-user server has a session of their own, so a question from Alice's
session is Alice's to answer. Before, the newest caller on the server was asked whoever it was:
with Bob's call in flight after Alice's, Bob was asked "Confirm for alice?" and his answer went
to Alice's call.

The upstream is the OAuth peer (oauth_peer.py) in the handshake era (`protocol: legacy`); its
tool `confirm` asks "Confirm for <subject>?" after `delay` seconds. The callers are in this
process, each with a client (a `DownstreamPeer`) that records what it is asked.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import mcp_types as types

from identity.oidc_peer import Idp
from mcp_nexus.identity.principal import Principal
from mcp_nexus.pipeline.call import Caller, InputRound
from oauth.test_oauth_per_user import McpUser, per_user_gateway


class Client:
    """A user's client as the gateway reaches it back: answers every question, recording it."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    @property
    def can_send_request(self) -> bool:
        return True

    async def send_request(self, request: Any, result_type: Any) -> Any:
        self.asked.append(request.params.message)
        return result_type.model_validate({"action": "accept", "content": {"ok": True}})

    async def send_log_message(self, *args: Any, **kwargs: Any) -> None:
        return None


def user(name: str, issuer: str, client: Client) -> Caller:
    principal = Principal(issuer=issuer, subject=name, client_id="ide")
    return Caller("http", "ide", peer=client, capabilities={"elicitation": {}}, principal=principal)


def text(result: Any) -> str:
    assert isinstance(result, types.CallToolResult) and not result.is_error, result
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_each_users_question_goes_to_that_user_never_the_newest_caller(
    tmp_path: Path, idp: Idp
) -> None:
    async with per_user_gateway(tmp_path, idp, server_extra={"protocol": "legacy"}) as setup:
        gateway = setup.runtime.gateway
        for name in ("alice", "bob"):
            await McpUser(setup, name).log_in(setup.peer, as_subject=name)  # type: ignore[arg-type]
        [confirm] = [name for name in gateway.catalog.tools if name.endswith("confirm")]
        alice, bob, operator = Client(), Client(), Client()

        # Alice's server asks after 1 s; Bob's call (asking after 3 s) is in flight by then, newer.
        alices = asyncio.create_task(
            gateway.call_tool(confirm, {"delay": 1.0}, caller=user("alice", idp.issuer, alice))
        )
        await asyncio.sleep(0.3)
        bobs = asyncio.create_task(
            gateway.call_tool(confirm, {"delay": 3.0}, caller=user("bob", idp.issuer, bob))
        )
        await asyncio.sleep(0.3)
        # A caller without a user (the operator's login), newest of all while Alice's server asks.
        operators = asyncio.create_task(
            gateway.call_tool(confirm, {"delay": 2.0}, caller=Caller("stdio", "cli", peer=operator))
        )
        assert text(await alices) == "alice: accept"
        assert text(await bobs) == "bob: accept"
        assert text(await operators) == "operator: accept"
        assert alice.asked == ["Confirm for alice?"]
        assert bob.asked == ["Confirm for bob?"]
        assert operator.asked == ["Confirm for operator?"]


async def test_a_2026_user_answers_their_per_user_servers_question_in_a_next_round(
    tmp_path: Path, idp: Idp
) -> None:
    """The same server for a 2026-07-28 user: their call is held on their own session
    (pipeline/held_calls.py) and the question comes back as an input request."""
    async with per_user_gateway(tmp_path, idp, server_extra={"protocol": "legacy"}) as setup:
        gateway = setup.runtime.gateway
        await McpUser(setup, "alice").log_in(setup.peer, as_subject="alice")  # type: ignore[arg-type]
        [confirm] = [name for name in gateway.catalog.tools if name.endswith("confirm")]
        principal = Principal(issuer=idp.issuer, subject="alice", client_id="ide")
        alice = Caller("http", "ide", modern=True, capabilities={"elicitation": {}}, principal=principal)

        asked = await gateway.call_tool(confirm, {}, caller=alice)
        assert isinstance(asked, types.InputRequiredResult), asked
        [(key, question)] = (asked.input_requests or {}).items()
        assert question.params.message == "Confirm for alice?"  # asked over her own login
        answer = {key: {"action": "accept", "content": {"ok": True}}}
        done = await gateway.call_tool(
            confirm,
            {},
            caller=alice,
            round_=InputRound(input_responses=answer, request_state=asked.request_state),
        )
        assert text(done) == "alice: accept"
        assert len(gateway.held_calls) == 0
