"""Resources, prompts and completions of a per-user server are asked for over the user's own session.

The upstream is the OAuth peer (oauth_peer.py): its resource `whoami://subject`, its prompt
`whoami_prompt` and the completions of its prompt `greet` answer the subject of the token they
were asked with, as its tool `whoami` does.
Before, only tools/call went per user: a user without a login of their own read the server's
resources and prompts over the operator's login, so as the operator. Now the user is led to their
own login, then reads as themselves. A caller without a user still uses the operator's login.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types

from identity.oidc_peer import Idp
from mcp_nexus.pipeline.call import Caller
from oauth.test_oauth_per_user import McpUser, per_user_gateway

URI = "whoami://subject"


def _text(answer: dict[str, Any]) -> str:
    result = answer.get("result")
    assert result is not None, answer
    if "contents" in result:
        return str(result["contents"][0]["text"])
    return str(result["messages"][0]["content"]["text"])


async def test_a_users_reads_and_prompts_go_over_their_own_login_never_the_operators(
    tmp_path: Path, idp: Idp
) -> None:
    async with per_user_gateway(tmp_path, idp) as setup:
        gateway = setup.runtime.gateway
        [prompt] = [name for name in gateway.catalog.prompts if name.endswith("whoami_prompt")]
        read = {"uri": URI}
        ask = {"name": prompt, "arguments": {}}
        alice = McpUser(setup, "alice")
        # no login of her own: led to one (URL elicitation), never answered as the operator
        for method, params in (("resources/read", read), ("prompts/get", ask)):
            refused = await alice.request(method, params)
            assert refused.get("error", {}).get("code") == types.URL_ELICITATION_REQUIRED, refused
            assert "operator" not in str(refused), refused
        await alice.log_in(setup.peer, as_subject="alice")  # type: ignore[arg-type]
        assert _text(await alice.request("resources/read", read)) == "alice"
        assert _text(await alice.request("prompts/get", ask)) == "asked as alice"
        # the answers are the gateway's: the upstream's 2026-07-28 serverInfo stamp is not passed on
        for method, params in (("resources/read", read), ("prompts/get", ask)):
            assert "oauth-peer" not in json.dumps(await alice.request(method, params))
        # a caller without a user (stdio): the operator's login, as for tools
        stdio = Caller("stdio", "cli")
        operator = await gateway.read_resource(URI, caller=stdio)
        assert isinstance(operator, types.ReadResourceResult)
        assert operator.contents[0].text == "operator"  # type: ignore[union-attr]
        assert "io.modelcontextprotocol/serverInfo" not in (operator.meta or {})  # any caller, any server
        prompted = await gateway.get_prompt(prompt, caller=stdio)
        assert isinstance(prompted, types.GetPromptResult)
        assert prompted.messages[0].content.text == "asked as operator"  # type: ignore[union-attr]


async def test_an_unlisted_uri_asked_of_every_server_ends_at_the_users_login_not_the_operators(
    tmp_path: Path, idp: Idp
) -> None:
    """A URI nobody lists is asked of every server with resources. A per-user server the user has no
    login to is passed over; with no other server to answer, its login URL is the answer."""
    async with per_user_gateway(tmp_path, idp) as setup:
        bob = McpUser(setup, "bob")
        refused = await bob.request("resources/read", {"uri": "whoami://nobody-lists-this"})
        error = refused.get("error")
        assert error is not None, refused
        assert "operator" not in str(refused), refused
        assert error["code"] == types.URL_ELICITATION_REQUIRED, refused
        [elicitation] = error["data"]["elicitations"]
        assert "notes" in elicitation["message"], elicitation


async def test_a_users_completions_go_over_their_own_login(tmp_path: Path, idp: Idp) -> None:
    async with per_user_gateway(tmp_path, idp) as setup:
        gateway = setup.runtime.gateway
        [prompt] = [name for name in gateway.catalog.prompts if name.endswith("greet")]
        complete = {"ref": {"type": "ref/prompt", "name": prompt}, "argument": {"name": "name", "value": ""}}
        alice = McpUser(setup, "alice")
        refused = await alice.request("completion/complete", complete)
        assert refused.get("error", {}).get("code") == types.URL_ELICITATION_REQUIRED, refused
        await alice.log_in(setup.peer, as_subject="alice")  # type: ignore[arg-type]
        answer = await alice.request("completion/complete", complete)
        assert answer.get("result", {}).get("completion", {}).get("values") == ["alice"], answer
        assert "oauth-peer" not in json.dumps(answer), answer
        operator = await gateway.complete(
            types.PromptReference(type="ref/prompt", name=prompt),
            {"name": "name", "value": ""},
            caller=Caller("stdio", "cli"),
        )
        assert operator.completion.values == ["operator"]
