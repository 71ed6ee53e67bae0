"""The critical path of one stdio tools/call inside the gateway, segment by segment.

    .venv/bin/python bench/critical_path.py [--calls 3000] [--protocol legacy|auto]

A lean client (handshake era) sends sequential `echo` calls to `nexus serve --stdio`, which
runs under this script (`--serve`) with timestamps taken at the seams of a call: the bytes
of the request arriving, the inbound task made, the pipeline, the route, the upstream
request written; then the upstream's bytes arriving, the waiting call resolved, the result
validated, the metrics recorded, the answer serialised and written. What happens between
the two writes is the upstream's time. Prints the median of each segment over the calls
after a warm-up (SIGUSR1 starts the record, SIGUSR2 writes it out).

Only the time between "bytes arrived" and "answer written" delays the caller: work after a
write overlaps with the other process. The marks patch Nexus internals (named below) and
cost a fraction of a microsecond each; the script fails loudly when one of them moved.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

Mark = tuple[str, int]


def serve_marked(record_path: str, argv: list[str]) -> None:
    """The gateway side: `nexus serve ...` with a timestamp at each seam of a call."""
    import mcp_types as types

    from mcp_nexus import gateway
    from mcp_nexus.frontends.mcp import stdio as stdio_frontend
    from mcp_nexus.jsonrpc import lines, peer
    from mcp_nexus.pipeline.steps import metrics, route

    marks: list[Mark] = []
    now = time.perf_counter_ns

    def before(owner: Any, attribute: str, label: str | Callable[[Any], str]) -> None:
        original = getattr(owner, attribute)

        def marked(*args: Any, **kwargs: Any) -> Any:
            marks.append((label if isinstance(label, str) else label(args[0]), now()))
            return original(*args, **kwargs)

        setattr(owner, attribute, marked)

    def after(owner: Any, attribute: str, label: str) -> None:
        original = getattr(owner, attribute)

        def marked(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            marks.append((label, now()))
            return result

        setattr(owner, attribute, marked)

    frontend_name = "stdio frontend"
    before(lines.LineSplitter, "feed", "bytes arrived")
    # _handle's coroutine is made as the request is read; its task runs a loop turn later.
    before(peer.JsonRpcPeer, "_handle", "inbound task made")
    before(gateway.Gateway, "_run", "pipeline entered")
    before(route.RouteStep, "_tool", "route entered")
    before(peer.JsonRpcPeer, "send_raw_request", "upstream request made")
    before(
        peer.JsonRpcPeer,
        "_emit",
        lambda self: "answer written" if self.options.name == frontend_name else "upstream request written",
    )
    after(peer.JsonRpcPeer, "_resolve", "waiting call resolved")
    before(metrics.MetricsStep, "record", "steps unwound")
    after(metrics.MetricsStep, "record", "metrics recorded")
    validate = types.CallToolResult.model_validate.__func__  # type: ignore[attr-defined]

    def validated(cls: Any, *args: Any, **kwargs: Any) -> Any:
        marks.append(("upstream result read", now()))
        result = validate(cls, *args, **kwargs)
        marks.append(("result validated", now()))
        return result

    types.CallToolResult.model_validate = classmethod(validated)  # type: ignore[assignment]
    raw_result = stdio_frontend.RawResult

    def serialised(data: bytes) -> Any:
        marks.append(("answer serialised", now()))
        return raw_result(data)

    stdio_frontend.RawResult = serialised  # type: ignore[misc,assignment]

    def write_out() -> None:
        Path(record_path).write_text(json.dumps(marks))

    import _common as bench

    bench.serve_switched(marks.clear, write_out, argv)


def segments(marks: list[Mark]) -> dict[tuple[str, str], list[float]]:
    """Microseconds between consecutive marks, by (from, to)."""
    found: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (label, at), (next_label, next_at) in itertools.pairwise(marks):
        found[(label, next_label)].append((next_at - at) / 1000)
    return found


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve_marked(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--protocol", choices=["legacy", "auto"], default="legacy")
    args = parser.parse_args()

    import _common as bench

    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "marks.json"
        latencies = bench.switched_calls(__file__, record, args.protocol, 500, args.calls)
        found = segments(json.loads(record.read_text()))
    print(
        f"{args.calls} sequential calls, upstream protocol {args.protocol}; "
        f"client latency median {statistics.median(latencies) * 1e6:.0f} us"
    )
    path = [(pair, series) for pair, series in found.items() if len(series) >= args.calls * 0.9]
    inside = 0.0
    for (start, end), series in path:
        median = statistics.median(series)
        outside = {"upstream request written": "the upstream", "answer written": "the client"}.get(start)
        inside += 0 if outside else median
        note = f"  ({outside}, and the pipes)" if outside else ""
        print(f"  {start:>26} -> {end:<26} median {median:7.1f} us{note}")
    print(f"  the gateway's critical path, summed: {inside:.0f} us per call")


if __name__ == "__main__":
    main()
