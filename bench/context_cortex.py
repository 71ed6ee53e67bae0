"""Context task 3, over Cortex (the built-in knowledge graph): a two-hop join, then one write per row.

"Which services depend on a deprecated database? Note on each that it must migrate, and tell me
who owns most of them." The graph is generated for the run (seeded): databases (some tagged
deprecated), services that depend on one or two of them and use a few libraries, people who
own the services. The truth comes from the generator; an answer is correct when it names exactly
the affected services and their most frequent owner, and, read back from Cortex afterwards, each
of those services (and no other) carries the migration note.
"""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_conversation import Conversation, Seen, pick, read_back, sole_leader
from mcp_nexus.builtin.cortex.store import KnowledgeStore

NOTE = "Depends on a deprecated database: plan its migration."
QUESTION = (
    "Which services depend on a deprecated database? Add a note to each of them that it must "
    f"migrate ({NOTE!r}), and tell me who owns most of them."
)
WORDS = [
    "orders",
    "billing",
    "search",
    "catalog",
    "payments",
    "auth",
    "profile",
    "inventory",
    "shipping",
    "reports",
]

# What the model extracts at each step, as Python over the step's result (`data`): the same
# expression whether it reads the result in its context or asks python_sandbox to (offloaded).
DEPRECATED = "[h['id'] for h in data['results'] if h['type'] == 'database' and 'deprecated' in h['tags']]"
DEPENDENTS = "sorted({r['src'] for r in data['relations'] if r['rel'] == 'depends_on' and r['dst'] in DBS})"
OWNERS = "{r['dst']: r['src'] for r in data['relations'] if r['rel'] == 'owns' and r['dst'] in SERVICES}"


@dataclass
class Graph:
    folder: Path
    truth: tuple[set[str], str] = (set(), "")
    services: list[str] = field(default_factory=list)


def make_graph(folder: Path, services: int, seed: int = 24) -> Graph:
    """Databases, services, libraries and people in a Cortex folder; the affected services and top owner."""
    rng = random.Random(seed)
    store = KnowledgeStore(folder)
    databases = [f"{word}-db" for word in WORDS[:8]] + [
        "legacy-mysql",
        "old-warehouse",
        "events-db",
        "cache-redis",
    ]
    deprecated = {"legacy-mysql", "old-warehouse"}
    people = [f"person-{i:02d}" for i in range(30)]
    libraries = [f"lib-{i:02d}" for i in range(60)]
    names = [f"{rng.choice(WORDS)}-svc-{i:03d}" for i in range(services)]
    depends: dict[str, list[str]] = {}
    owner: dict[str, str] = {}
    with store.transaction() as t:
        for db in databases:
            tags = ["database", "deprecated"] if db in deprecated else ["database"]
            desc = f"The {db} database." + (
                " Deprecated: it will be retired next year." if db in deprecated else ""
            )
            t.add_entity("tech_stack", db, "database", db.replace("-", " ").title(), desc, tags)
        for lib in libraries:
            t.add_entity("tech_stack", lib, "library", f"Library {lib[4:]}", "A shared library.", ["library"])
        for person in people:
            t.add_entity("people", person, "person", f"Person {person[7:]}", "An engineer.", ["engineer"])
        weights = [rng.uniform(0.2, 3.0) for _ in people]  # some people own many services
        for name in names:
            t.add_entity(
                "projects",
                name,
                "service",
                name.replace("-", " ").title(),
                f"The {name} service.",
                ["service"],
            )
            depends[name] = rng.sample(databases, rng.randint(1, 2))
            for db in depends[name]:
                t.connect(name, "depends_on", db, "reads and writes its data there")
            for lib in rng.sample(libraries, rng.randint(2, 4)):
                t.connect(name, "uses", lib)
            owner[name] = rng.choices(people, weights)[0]
            t.connect(owner[name], "owns", name, "on call for it")
    affected = {name for name in names if deprecated & set(depends[name])}
    top = sole_leader(Counter(owner[name] for name in affected), "owner")
    return Graph(folder, (affected, top), names)


@dataclass
class CortexTask:
    services: int = 150
    seed: int = 24
    graph: Graph | None = None

    def __post_init__(self) -> None:
        self.name = (
            f"Cortex: services on a deprecated database ({self.services} services), note each, top owner"
        )
        self.question = QUESTION

    def servers(self, workdir: Path) -> dict[str, Any]:
        """Cortex embedded in the gateway, over a fresh copy of the generated folder (the task writes)."""
        if self.graph is None:
            self.graph = make_graph(workdir.parent / "cortex-source", self.services, self.seed)
        folder = workdir / "cortex"
        shutil.copytree(self.graph.folder, folder)
        module = "mcp_nexus.builtin.cortex.server:create_server"
        return {
            "cortex": {
                "transport": "embedded",
                "module": module,
                "options": {"knowledge_dir": str(folder), "preload": False},
            }
        }

    async def run(self, mode: str, chat: Conversation) -> tuple[bool, str]:
        assert self.graph is not None
        noted, top = await SCRIPTS[mode](chat)
        chat.answer(
            f"{len(noted)} services depend on a deprecated database: {', '.join(noted)}. {top} owns most of them."
        )
        affected, owner = self.graph.truth
        right = set(noted) == affected and top == owner and await self.notes_match(chat, affected)
        return right, f"{len(noted)} services, most owned by {top}"

    async def notes_match(self, chat: Conversation, affected: set[str]) -> bool:
        """Read back from Cortex: the note is on every affected service and on no other."""
        assert self.graph is not None
        noted: set[str] = set()
        for start in range(0, len(self.graph.services), 100):
            ids = self.graph.services[start : start + 100]
            found = await read_back(
                chat.runtime, "cortex", "open_entities", {"ids": ids, "relation_limit": 0}
            )
            for entity in found["entities"]:
                if any(o["text"] == NOTE for o in entity["observations"]):
                    noted.add(entity["id"])
        return noted == affected


async def _read(chat: Conversation, seen: Seen, expression: str, **names: Any) -> Any:
    """What the model takes out of a result: it reads it in context, or, offloaded, asks python_sandbox."""
    if seen.offloaded_file is None:
        return eval(expression, {**names, "data": seen.json()})  # the model reading rows it has in context
    code = (
        "".join(f"{key} = {value!r}\n" for key, value in names.items()) + f"print(json.dumps({expression}))"
    )
    (out,) = await chat.turn(("python_sandbox", {"code": code, "files": [seen.offloaded_file]}))
    return json.loads(out.text)


async def _walk(chat: Conversation, call: Any) -> tuple[list[str], str]:
    """The steps every way but code mode takes, `call(tool, arguments)` naming the call as the mode does."""
    (hits,) = await chat.turn(call("cortex.search_knowledge", {"query": "deprecated database", "limit": 20}))
    dbs = await _read(chat, hits, DEPRECATED)
    (around,) = await chat.turn(call("cortex.open_entities", {"ids": dbs, "relation_limit": 5000}))
    services = await _read(chat, around, DEPENDENTS, DBS=dbs)
    (owned,) = await chat.turn(call("cortex.open_entities", {"ids": services, "relation_limit": 5000}))
    owners = await _read(chat, owned, OWNERS, SERVICES=services)
    notes = [call("cortex.add_observation", {"id": service, "text": NOTE}) for service in services]
    written = await chat.batched(notes)
    noted = [s for s, seen in zip(services, written, strict=True) if not seen.is_error]
    return noted, Counter(owners[s] for s in noted).most_common(1)[0][0]


def _direct(name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return name, arguments


def _through_call_tool(name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "call_tool", {"name": name, "arguments": arguments}


async def relay(chat: Conversation) -> tuple[list[str], str]:
    return await _walk(chat, _direct)


async def offload(chat: Conversation) -> tuple[list[str], str]:
    return await _walk(chat, _direct)  # the same steps; offloaded results are read through the sandbox


async def search(chat: Conversation) -> tuple[list[str], str]:
    find, relations, note = await chat.find(
        "search the knowledge graph", "open entities with their relations", "add a note to an entity"
    )
    pick(find, "cortex.search_knowledge")
    pick(relations, "cortex.open_entities")
    pick(note, "cortex.add_observation")
    return await _walk(chat, _through_call_tool)


CODE = f"""
hits = tools.cortex.search_knowledge(query="deprecated database", limit=20)
dbs = [h["id"] for h in hits["results"] if h["type"] == "database" and "deprecated" in h["tags"]]
around = tools.cortex.open_entities(ids=dbs, relation_limit=5000)
services = sorted({{r["src"] for r in around["relations"] if r["rel"] == "depends_on" and r["dst"] in dbs}})
owned = tools.cortex.open_entities(ids=services, relation_limit=5000)
owners = {{r["dst"]: r["src"] for r in owned["relations"] if r["rel"] == "owns" and r["dst"] in services}}
for service in services:
    tools.cortex.add_observation(id=service, text={NOTE!r})
import collections
print(json.dumps({{"services": services, "owners": collections.Counter(owners.values()).most_common(3)}}))
"""
PEEK = """
hits = tools.cortex.search_knowledge(query="deprecated database", limit=3)
print(hits)
print(json.dumps(tools.cortex.open_entities(ids=[hits["results"][0]["id"]], relation_limit=3))[:1500])
"""


async def code(chat: Conversation) -> tuple[list[str], str]:
    await chat.turn(("python_sandbox", {"code": PEEK}))  # what do hits and relations look like?
    (done,) = await chat.turn(("python_sandbox", {"code": CODE}))
    if done.is_error:
        raise AssertionError(f"the code failed: {done.text[:2000]}")
    answer = json.loads(done.text)
    return list(answer["services"]), answer["owners"][0][0]


SCRIPTS = {"relay": relay, "search": search, "offload": offload, "code": code}
