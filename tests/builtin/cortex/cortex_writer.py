"""A writer process for the concurrency test: appends entities, observations and relations.

    python cortex_writer.py FOLDER PREFIX COUNT THREADS GO_FILE

Waits for GO_FILE so every writer starts at once. Each of THREADS threads first races the
other writers for the ids contested-0..CONTESTED-1 (each may be won by one writer only),
then adds COUNT entities, one observation on the shared entity and one relation each.
Prints one JSON line: the contested ids this process won.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

from mcp_nexus.builtin.cortex.errors import EntityExistsError
from mcp_nexus.builtin.cortex.store import KnowledgeStore

CONTESTED = 30


def main() -> None:
    folder, prefix, count, threads, go_file = (
        sys.argv[1],
        sys.argv[2],
        int(sys.argv[3]),
        int(sys.argv[4]),
        sys.argv[5],
    )
    store = KnowledgeStore(folder)
    won: list[str] = []

    def work(thread: int) -> None:
        for contested in range(CONTESTED):
            try:
                store.add_entity(
                    "projects", f"contested-{contested}", "project", "Contested", f"{prefix}-t{thread}"
                )
                won.append(f"contested-{contested}")
            except EntityExistsError:
                pass
        for index in range(count):
            entity_id = f"{prefix}-t{thread}-e{index}"
            store.add_entity("concepts", entity_id, "concept", f"Entity {entity_id}", "written concurrently")
            store.add_observation("shared", f"{entity_id} was here")
            store.connect(entity_id, "points_to", "shared")

    deadline = time.monotonic() + 30
    while not Path(go_file).exists():
        if time.monotonic() > deadline:
            raise SystemExit("the go file never appeared")
        time.sleep(0.005)
    workers = [threading.Thread(target=work, args=(thread,)) for thread in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print(json.dumps({"won": won}))


if __name__ == "__main__":
    main()
