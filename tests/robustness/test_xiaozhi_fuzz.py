"""Property-based fuzzing of the Xiaozhi endpoint link and the envelope server (issue 12 item 2).

One `nexus serve` for the module. Invariants per example: the link stays open, every frame
Nexus sends is strict JSON, well-formed requests are answered exactly once (on the envelope
server: those with numeric ids, the device rule), and nothing else earns more than one error.
These dialects may ignore malformed input, so they are not required to answer it.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from robustness.strategies import Draft, Renderer, drafts
from robustness.wire import (
    NotStrictJson,
    Sent,
    StreamLedger,
    classify,
    id_key,
    is_answer,
    judge_stream,
    strict_loads,
)
from robustness.xiaozhi_links import Device, Stack, as_frame, closed_note, frame_with_id, judge_frames

pytestmark = pytest.mark.asyncio(loop_scope="module")

FUZZ_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a closed link fails every later example
    suppress_health_check=list(HealthCheck),
)
# One endpoint link for all examples: ids stay unique across them, and late answers are traced back.
ENDPOINT_RENDERER = Renderer("xz")
ENDPOINT_LEDGER = StreamLedger()
# The endpoint dialect reads a batch as several messages (docs/XIAOZHI.md): no batches here.
link_exchanges = st.lists(drafts.filter(lambda d: not isinstance(d.message, list)), min_size=1, max_size=4)


def endpoint_messages(frame: bytes) -> list[bytes]:
    """The messages the endpoint link reads from one frame (docs/XIAOZHI.md): a frame that is
    a JSON array, or several lines that are not one JSON value, count as several messages; each
    may earn its own answer. A raw-text draft can render as `[1,2]` even though no batch draft
    is generated, so the test reads frames exactly as the link does instead of filtering."""
    data = frame.strip()
    try:
        decoded = strict_loads(data)
    except NotStrictJson:
        lines = [line for line in data.splitlines() if line.strip()]
        return lines if len(lines) >= 2 else [frame]
    if isinstance(decoded, list) and decoded:
        return [json.dumps(item).encode() for item in decoded]
    return [frame]


def as_the_dialect_reads_it(sent: Sent, *, numeric_ids_only: bool) -> Sent:
    """These links may ignore malformed input; a device also ignores requests with string ids."""
    if sent.kind == "invalid" or (
        sent.kind == "request" and numeric_ids_only and not isinstance(sent.id, int)
    ):
        return Sent("maybe", sent.id, sent.has_id)
    return sent


@FUZZ_SETTINGS
@given(exchange=link_exchanges)
async def test_endpoint_link_never_closes_on_fuzzed_frames(stack: Stack, exchange: list[Draft]) -> None:
    session = await stack.endpoint_session()
    renderer = ENDPOINT_RENDERER
    start = len(session.frames)
    frames = [renderer.render(draft) for draft in exchange]
    sent = [
        as_the_dialect_reads_it(classify(message), numeric_ids_only=False)
        for frame in frames
        for message in endpoint_messages(frame)
    ]
    shown = "\n".join(repr(frame[:300]) for frame in frames)
    for frame in frames:
        await session.send_raw(as_frame(frame))
    for message in sent:
        if message.kind == "request":
            try:
                await frame_with_id(
                    session.frames, start, message.id, timeout=5, closed=session.closed.is_set
                )
            except AssertionError as exc:
                raise AssertionError(f"{exc}; {closed_note(session)}\nsent:\n{shown}") from None
    try:
        pong = await session.ping()
    except (ConnectionError, TimeoutError, OSError) as exc:
        raise AssertionError(
            f"ping failed ({type(exc).__name__}); {closed_note(session)}\nsent:\n{shown}"
        ) from None
    messages, problems = judge_frames(session.frames[start:])
    assert not problems, f"{problems}\nsent:\n{shown}"
    answers = [m for m in messages if is_answer(m) and id_key(m.get("id")) != id_key(pong["id"])]
    verdict = ENDPOINT_LEDGER.judge(sent, answers)
    assert not verdict.problems, f"{verdict.problems}\nanswers: {answers}\nsent:\n{shown}"


@FUZZ_SETTINGS
@given(exchange=link_exchanges)
async def test_envelope_server_never_drops_the_connection_on_fuzzed_payloads(
    stack: Stack, exchange: list[Draft]
) -> None:
    device = await Device.open(stack.envelope_port)
    try:
        renderer = Renderer("env")
        start = len(device.frames)
        payloads = [renderer.render(draft) for draft in exchange]
        sent = [as_the_dialect_reads_it(classify(p), numeric_ids_only=True) for p in payloads]
        shown = "\n".join(repr(p[:300]) for p in payloads)
        for payload in payloads:
            await device.send_payload_raw(payload)
        for message in sent:
            if message.kind == "request":
                try:
                    await frame_with_id(
                        device.frames, start, message.id, timeout=5, closed=lambda: device.closed
                    )
                except AssertionError as exc:
                    raise AssertionError(f"{exc}; {device.closed_note()}\nsent:\n{shown}") from None
        try:
            pong = await device.request("ping", timeout=5)
        except AssertionError as exc:
            raise AssertionError(f"ping failed ({exc}); {device.closed_note()}\nsent:\n{shown}") from None
        answers, problems = device.payloads_since(start)
        assert not problems, f"{problems}\nsent:\n{shown}"
        answers = [a for a in answers if is_answer(a) and id_key(a.get("id")) != id_key(pong["id"])]
        verdict = judge_stream(sent, answers)
        assert not verdict.problems, f"{verdict.problems}\nanswers: {answers}\nsent:\n{shown}"
    finally:
        await device.close()
