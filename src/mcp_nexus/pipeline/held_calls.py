"""A handshake-era server's questions, handed to a 2026-07-28 caller as input requests.

A handshake-era server asks its client mid-call (sampling, elicitation, roots) and waits on
the same connection for the answer; a 2026-07-28 client has no such channel: it is asked
with an `InputRequiredResult` and answers by sending the call again with `inputResponses`
and the `requestState` it was given (SEP-2322). Between the two the gateway holds the call:
the upstream request runs on in a task of its own, each question the server asks becomes one
entry of an `InputRequiredResult` whose `requestState` names the held call, and the caller's
retry hands the answers to the waiting server and waits for what comes next (the result, or
the next questions).

Bounds: at most `MAX_HELD` calls are held at once (beyond, a call runs as before: the
server's questions are refused, naming why); a question waits `ANSWER_WAIT_S` for its answer,
then the server is told the caller did not answer; a held call belongs to the caller that
started it (`Caller.identity`) and to what it asked (the method and the tool, prompt or
URI), and its `requestState` is 32
random bytes, so no one else can answer for it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
from collections.abc import Callable, Coroutine
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from mcp_nexus.pipeline.call import Caller, CallOutcome, InputRound, ResultT

logger = logging.getLogger(__name__)

STATE_PREFIX = "nexus-held."
"""Marks a `requestState` this gateway minted (a 2026-07-28 server's own pass through untouched)."""

MAX_HELD = 256
ANSWER_WAIT_S = 600.0
"""How long a server's question waits for the caller's answer (elicitation waits on a person)."""

Asked = tuple[str, str]
"""What a held call asked of its server: (method, the tool's or prompt's gateway name, or the URI)."""

_CAPABILITY = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}


def asks_back(caller: Caller) -> bool:
    """A 2026-07-28 caller that declared it answers some server request (else nothing to hold for)."""
    capabilities = caller.capabilities or {}
    return caller.modern and any(capabilities.get(name) is not None for name in _CAPABILITY.values())


def held_state(round_: InputRound | None) -> str | None:
    """The `requestState` of a retry that answers a held call, else None."""
    state = round_.request_state if round_ is not None else None
    return state if state is not None and state.startswith(STATE_PREFIX) else None


class _Question:
    __slots__ = ("answer", "key", "request")

    def __init__(self, key: str, request: types.InputRequest) -> None:
        self.key = key
        self.request = request
        self.answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()


class HeldCall:
    """One upstream call held for a 2026-07-28 caller between its rounds."""

    def __init__(self, token: str, owner: str, asked: Asked, server: str) -> None:
        self.token = token
        self.owner = owner  # Caller.identity of the caller that started it
        self.asked_for = asked  # (method, the gateway's name of the tool or prompt, or the URI)
        self.server = server  # the upstream that runs it
        self.task: asyncio.Task[CallOutcome] | None = None
        self._asked: list[_Question] = []  # asked by the server, not yet handed to the caller
        self._handed: dict[str, _Question] = {}  # handed to the caller, waiting for its answers
        self._numbers = 0
        self._changed = asyncio.Event()
        self.progress: Any = None  # the current round's progress callback (each round is a new request)

    async def ask(self, request: types.InputRequest, result_type: type[ResultT]) -> ResultT:
        """The server's question, answered by the caller's next round (or refused after ANSWER_WAIT_S)."""
        self._numbers += 1
        question = _Question(f"q{self._numbers}", request)
        self._asked.append(question)
        self._changed.set()
        try:
            async with asyncio.timeout(ANSWER_WAIT_S):
                value = await question.answer
        except TimeoutError:
            raise MCPError(
                types.REQUEST_TIMEOUT,
                f"the caller did not answer {request.method} within {ANSWER_WAIT_S:g} s",
            ) from None
        finally:
            self._handed.pop(question.key, None)
            if question in self._asked:
                self._asked.remove(question)
        try:
            return result_type.model_validate(value)
        except ValidationError as exc:
            raise MCPError(
                types.INVALID_PARAMS,
                f"the caller's answer to {request.method} is not a {result_type.__name__}: "
                f"{exc.errors()[0]['msg']}",
            ) from None

    @property
    def waiting(self) -> bool:
        """Some question of this call waits for the caller's answer."""
        return bool(self._asked or self._handed)

    def answer(self, responses: dict[str, Any] | None) -> None:
        """Hand the caller's answers to the questions of the last round; an unanswered one is refused."""
        responses = responses or {}
        for key, question in list(self._handed.items()):
            if question.answer.done():
                continue
            if key in responses:
                value = responses[key]
                question.answer.set_result(
                    value.model_dump(by_alias=True) if isinstance(value, BaseModel) else value
                )
            else:
                question.answer.set_exception(
                    MCPError(types.INVALID_PARAMS, f"the caller gave no answer to input request {key!r}")
                )
        self._handed.clear()

    async def next_outcome(self) -> CallOutcome:
        """The call's result, or the questions asked since the last round as an `InputRequiredResult`.

        Waits on an event, never on the task itself: a caller that goes away (its request
        cancelled) must not cancel the call it may still answer.
        """
        assert self.task is not None
        while True:
            if self._asked:
                await asyncio.sleep(0)  # questions asked in the same breath go out in one round
                if not self._asked:
                    continue  # a concurrent round of the same call took them
                questions, self._asked = self._asked, []
                self._handed.update((question.key, question) for question in questions)
                return types.InputRequiredResult(
                    input_requests={question.key: question.request for question in questions},
                    request_state=self.token,
                )
            if self.task.done():
                return self.task.result()
            self._changed.clear()
            await self._changed.wait()

    def finished(self) -> None:
        self._changed.set()
        for question in [*self._asked, *self._handed.values()]:
            if not question.answer.done():
                question.answer.cancel()


class HeldPeer:
    """The `DownstreamPeer` of a held call: the server's questions go to the held call's caller."""

    def __init__(self, held: HeldCall, capabilities: dict[str, Any] | None) -> None:
        self.held = held
        self.capabilities = capabilities or {}

    @property
    def can_send_request(self) -> bool:
        # The protocol links no server request to its call: the relay asks the newest caller that
        # can answer. A held call whose question is still unanswered is not asking another (its
        # server waits on that answer), so a question now is another call's.
        return not self.held.waiting

    async def send_request(self, request: Any, result_type: type[ResultT]) -> ResultT:
        capability = _CAPABILITY.get(request.method)
        if capability is None or self.capabilities.get(capability) is None:
            # 2026-07-28: a server may only ask what the caller declared it answers.
            raise MCPError(
                types.INVALID_REQUEST,
                f"the caller did not declare the {capability or request.method} capability",
            )
        return await self.held.ask(request, result_type)

    async def send_log_message(
        self, level: Any, data: Any, logger: str | None = None, related_request_id: Any = None
    ) -> None:
        return None  # a 2026-07-28 caller has no channel for a server's log lines (the gateway logs them)


class HeldCalls:
    """The calls held at one gateway, by the `requestState` their caller was given."""

    def __init__(self, limit: int = MAX_HELD) -> None:
        self.limit = limit
        self._held: dict[str, HeldCall] = {}

    def __len__(self) -> int:
        return len(self._held)

    async def start(
        self,
        caller: Caller,
        asked: Asked,
        server: str,
        progress: Any,
        run: Callable[[Caller, Any], Coroutine[Any, Any, CallOutcome]],
    ) -> CallOutcome:
        """Run `run(caller, progress)` held: its result, or its first questions as input requests.

        `run` gets the caller with a peer that hands the server's questions here, and a progress
        callback that reaches whichever round of the caller's is current.
        """
        if len(self._held) >= self.limit:
            logger.warning(
                "%d calls already wait for their callers' answers: %s %s runs unheld", self.limit, *asked
            )
            return await run(caller, progress)
        held = HeldCall(STATE_PREFIX + secrets.token_urlsafe(32), caller.identity, asked, server)
        held.progress = progress

        async def relay_progress(done: float, total: float | None, message: str | None) -> None:
            if held.progress is not None:
                await held.progress(done, total, message)

        held_caller = dataclasses.replace(caller, peer=HeldPeer(held, caller.capabilities))
        self._held[held.token] = held
        held.task = asyncio.create_task(
            run(held_caller, relay_progress if progress is not None else None), name=f"held-call {asked[1]}"
        )
        held.task.add_done_callback(lambda task: self._finished(held, task))
        try:
            return await self._round(held)
        except asyncio.CancelledError:
            held.task.cancel()  # its caller never got the requestState: no round can come for it
            raise

    async def resume(self, caller: Caller, asked: Asked, round_: InputRound, progress: Any) -> CallOutcome:
        """The caller's next round of a held call: its answers handed over, then what comes next."""
        token = held_state(round_)
        held = self._held.get(token) if token is not None else None
        if held is None or held.owner != caller.identity or held.asked_for != asked:
            raise MCPError(
                types.INVALID_PARAMS,
                f"requestState names no call of {asked[1]} ({asked[0]}) waiting for this caller's answers "
                "(it ended, its questions expired, or it was another caller's)",
            )
        held.progress = progress
        held.answer(round_.input_responses)
        return await self._round(held)

    @staticmethod
    async def _round(held: HeldCall) -> CallOutcome:
        outcome = await held.next_outcome()
        if isinstance(outcome, types.InputRequiredResult):
            held.progress = None  # this round's request is answered: its progress has nowhere to go
        return outcome

    def server_of(self, round_: InputRound | None) -> str | None:
        """The server a held call runs on, for the route to send its retry there."""
        token = held_state(round_)
        held = self._held.get(token) if token is not None else None
        return held.server if held is not None else None

    def _finished(self, held: HeldCall, task: asyncio.Task[CallOutcome]) -> None:
        self._held.pop(held.token, None)
        held.finished()
        if not task.cancelled():
            task.exception()  # read here, so an outcome no round took is never reported as lost

    async def close(self) -> None:
        """Cancel every held call (the gateway stops)."""
        tasks = [held.task for held in self._held.values() if held.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
