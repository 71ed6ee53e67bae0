"""The config's chains (docs/CHAINS.md) as tool-index entries, so search finds them like a server's tools.

A chain is served by the gateway itself: its entry's `server_id` is `nexus` (the name the
catalog and the profiles give the gateway's own tools), its `tool_name` and `name` are the
chain's key as clients see it, and it carries the tag `chain` besides the tags its name and
description earn under the tag rules. `blocking` and `cost_estimate` come from the chain's
`tool_config` (`blocking`, `cost`) when it sets them, else from its words, as for any tool
(tool_traits.py). An unchanged chain keeps its entry, and with it its `last_updated`.

Chains are not a server's answer: they are never saved in the index snapshot (the config is
their source, and a reload changes them); `ToolIndex.set_chains` holds them beside it.
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.tags import Tagger
from mcp_nexus.catalog.tool_traits import tool_traits
from mcp_nexus.config.chains import ChainConfig
from mcp_nexus.config.schema import CallPolicy

CHAIN_TAG = "chain"
"""The tag every chain's entry carries: `find_tools(tags=["chain"])`, a profile's `tag:chain`."""
CHAINS_SERVER_ID = "nexus"
"""Who answers a chain: the gateway (control/tool_source.py and profiles/view.py say the same)."""


def chain_entry(name: str, chain: ChainConfig, *, tagger: Tagger, now: str) -> IndexEntry:
    """The index entry of one chain, as of `now`."""
    description = chain.description
    schema = dict(chain.input_schema)
    traits = tool_traits(None, name, description, None, schema)
    policy = CallPolicy.model_validate(chain.tool_config)  # validated when the config loaded
    tags = [*tagger.tags_for(name, description), CHAIN_TAG]
    return IndexEntry(
        server_id=CHAINS_SERVER_ID,
        tool_name=name,
        name=name,
        description=description,
        input_schema=schema,
        tags=list(dict.fromkeys(tags)),  # an operator's rule may tag it "chain" as well
        blocking=traits.blocking if policy.blocking is None else policy.blocking,
        cost_estimate=traits.cost_estimate if policy.cost is None else policy.cost,
        last_updated=now,
    )


def chain_entries(
    chains: Mapping[str, ChainConfig],
    *,
    tagger: Tagger,
    now: str,
    previous: Mapping[str, IndexEntry] | None = None,
) -> tuple[IndexEntry, ...]:
    """Entries for `chains`, in config order; `previous` (by name) keeps an unchanged chain's entry."""
    entries = []
    for name, chain in chains.items():
        entry = chain_entry(name, chain, tagger=tagger, now=now)
        old = (previous or {}).get(name)
        entries.append(old if old is not None and old.digest == entry.digest else entry)
    return tuple(entries)
