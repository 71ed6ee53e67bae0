"""Tool-integrity pins in Redis (`stores.pins: redis://...`): one set of pins for every replica.

What replica A pinned is what replica B compares against, and an approval on any replica
releases the tool on all of them. The catalog judges tools synchronously at each rebuild
(catalog/tool_integrity.py), so each replica judges against a mirror: its local pin file
(catalog/tool_pins.py), kept in step with Redis in the background:

- a change made here (a tool pinned at first sight, an approval, a definition held) is written
  to the mirror at once and pushed to Redis right after; then `{"type": "tool_pins"}` goes out
  on the events bus and every other replica pulls what changed and rebuilds its catalog;
- every `SYNC_INTERVAL_S`, when the events bus subscribes again and when Redis comes back, a
  replica also pulls what changed since its last revision (one round trip when nothing did).

A tool pinned at first sight is written only if no replica pinned it before (HSETNX): when
two replicas first see different definitions, the first one written is the pin, and the
other replica adopts it and holds its tool as changed. An approval overwrites.

Redis down: nothing is held or released because of it. The replica keeps judging against
its mirror (the last pins it had, also read from the local file at start), keeps what it
pins or approves meanwhile and pushes it when Redis is back. A Redis that comes back empty
(restarted without persistence) gets a new epoch; each replica then writes its mirror back.

Keys (`P` is `stores.key_prefix`):
    P:pins:pin    hash   JSON [server, identity, tool] -> the pin (tool_pins.Pin.as_json)
    P:pins:held   hash   digest -> {"server", "tool", "since"}, or with "released": true once approved
    P:pins:log    zset   "p:<field>" or "h:<digest>", scored by the revision that last wrote it
    P:pins:rev    the last revision
    P:pins:epoch  a random id set when the keys are first written
Bounded: at most `max_pins` pins and `MAX_HELD` held digests (the least recently written go).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from mcp_nexus.catalog.tool_pins import DEFAULT_MAX_PINS, MAX_HELD, Pin, PinStore
from mcp_nexus.config.secrets import mask_url
from mcp_nexus.stores.events import EventBus
from mcp_nexus.stores.redis_link import RedisLink, RedisUnavailableError

logger = logging.getLogger(__name__)

EVENT_TYPE = "tool_pins"
SYNC_INTERVAL_S = 5.0  # how often a replica looks for changes it was not told of (a lost event)
PUSH_BATCH = 500  # operations per script call (a whole mirror written back goes in several)
RELEASED = '"released":true'  # the marker the scripts look for in a held record (compact JSON)

Op = Literal["pin_nx", "pin_set", "held_nx", "held_set"]

# KEYS: pin hash, held hash, log, rev, epoch. ARGV: a new epoch (used when there is none),
# max pins, max held, then (op, field, value) triples. Returns {epoch, created (0/1), rev, lost}:
# `lost` alternates field and the pin that was there for each pin_nx that found one already.
_WRITE = """
local created = redis.call('SET', KEYS[5], ARGV[1], 'NX') and 1 or 0
local lost = {}
for i = 4, #ARGV, 3 do
  local op, field, value = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local wrote = false
  if op == 'pin_nx' then
    wrote = redis.call('HSETNX', KEYS[1], field, value) == 1
    if not wrote then
      table.insert(lost, field)
      table.insert(lost, redis.call('HGET', KEYS[1], field))
    end
  elseif op == 'pin_set' then
    redis.call('HSET', KEYS[1], field, value)
    wrote = true
  elseif op == 'held_nx' then
    local was = redis.call('HGET', KEYS[2], field)
    if (not was) or string.find(was, '"released":true', 1, true) then
      redis.call('HSET', KEYS[2], field, value)
      wrote = true
    end
  elseif op == 'held_set' then
    redis.call('HSET', KEYS[2], field, value)
    wrote = true
  end
  if wrote then
    local kind = (op == 'pin_nx' or op == 'pin_set') and 'p:' or 'h:'
    redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[4]), kind .. field)
  end
end
local function trim(hash, kind, most)
  local excess = redis.call('HLEN', hash) - most
  local start = 0
  local gone = {}
  while excess > 0 do
    local page = redis.call('ZRANGE', KEYS[3], start, start + 199)
    if #page == 0 then break end
    for _, member in ipairs(page) do
      if excess > 0 and string.sub(member, 1, 2) == kind then
        table.insert(gone, member)
        excess = excess - 1
      end
    end
    start = start + 200
  end
  for _, member in ipairs(gone) do
    redis.call('HDEL', hash, string.sub(member, 3))
    redis.call('ZREM', KEYS[3], member)
  end
end
trim(KEYS[1], 'p:', tonumber(ARGV[2]))
trim(KEYS[2], 'h:', tonumber(ARGV[3]))
return {redis.call('GET', KEYS[5]), created, redis.call('GET', KEYS[4]) or '0', lost}
"""

# KEYS: pin hash, held hash, log, rev, epoch. ARGV: the revision read last, the epoch it was of.
# Returns {epoch, rev, "full" | "since", pins (field, value, ...), held (digest, value, ...)}:
# everything when the epoch is not the reader's, else what was written after its revision.
_READ = """
local epoch = redis.call('GET', KEYS[5])
local rev = redis.call('GET', KEYS[4]) or '0'
if (not epoch) or epoch ~= ARGV[2] then
  return {epoch or '', rev, 'full', redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2])}
end
local pins, held = {}, {}
for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ARGV[1], '+inf')) do
  local field = string.sub(member, 3)
  local into, hash = pins, KEYS[1]
  if string.sub(member, 1, 2) == 'h:' then into, hash = held, KEYS[2] end
  local value = redis.call('HGET', hash, field)
  if value then
    table.insert(into, field)
    table.insert(into, value)
  end
end
return {epoch, rev, 'since', pins, held}
"""


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _pairs(flat: list[Any]) -> list[tuple[str, str]]:
    return [(_text(flat[i]), _text(flat[i + 1])) for i in range(0, len(flat) - 1, 2)]


def pin_field(key: tuple[str, str, str]) -> str:
    """The hash field of a pin: its (server, identity, tool) as JSON (no separator can be ambiguous)."""
    return json.dumps(list(key), ensure_ascii=False, separators=(",", ":"))


def _compact(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class SharedPinStore:
    """A `PinKeeper` (catalog/tool_pins.py) whose pins and held definitions every replica shares."""

    def __init__(
        self,
        link: RedisLink,
        *,
        prefix: str,
        local: PinStore,
        bus: EventBus,
        on_change: Callable[[], None],
        max_pins: int = DEFAULT_MAX_PINS,
        sync_interval: float = SYNC_INTERVAL_S,
    ) -> None:
        self.link = link
        self.local = local  # the mirror, and what is judged against while Redis is away
        self.bus = bus
        self.on_change = on_change  # another replica's pin or approval arrived: judge the tools again
        self.max_pins = max_pins
        self.sync_interval = sync_interval
        self.keys = [f"{prefix}:pins:{name}" for name in ("pin", "held", "log", "rev", "epoch")]
        self.epoch: str | None = None  # of the Redis data the mirror follows (None: not read yet)
        self.rev = 0
        self.pulled = 0  # syncs that brought another replica's changes
        self.synced_at: float | None = None
        self._unpushed: dict[tuple[str, str], Op] = {}  # ("p", field) or ("h", digest) -> how to write it
        self._pin_keys: dict[str, tuple[str, str, str]] = {}
        self._lock = asyncio.Lock()
        self._wanted = False
        self._task: asyncio.Task[None] | None = None
        self._poller: asyncio.Task[None] | None = None
        self._published: set[asyncio.Task[None]] = set()
        self._outage_logged = False
        self._write = link.client.register_script(_WRITE)
        self._read = link.client.register_script(_READ)
        bus.subscribe(self._on_event)
        link.add_listener(self._on_link)

    # -- PinKeeper: the catalog's synchronous view, served by the mirror -------------------------

    @property
    def held(self) -> dict[str, dict[str, Any]]:
        return self.local.held

    @property
    def location(self) -> str:
        return f"{mask_url(self.link.url)} key {self.keys[0]} (local copy {self.local.path})"

    def get(self, server: str, identity: str, tool: str) -> Pin | None:
        return self.local.get(server, identity, tool)

    def pins(self) -> list[Pin]:
        return self.local.pins()

    def pin(
        self, server: str, identity: str, tool: str, definition: dict[str, Any], *, approved: bool = False
    ) -> Pin:
        pin = self.local.pin(server, identity, tool, definition, approved=approved)
        field = pin_field(pin.key)
        self._pin_keys[field] = pin.key
        if approved or self._unpushed.get(("p", field)) != "pin_set":  # an approval is never downgraded
            self._unpushed[("p", field)] = "pin_set" if approved else "pin_nx"
        return pin

    def remember_held(self, found: str, server: str, tool: str) -> None:
        if found not in self.local.held:
            self.local.remember_held(found, server, tool)
            self._unpushed[("h", found)] = "held_nx"

    def forget_held(self, found: str) -> None:
        if found in self.local.held:
            self.local.forget_held(found)
        self._unpushed[("h", found)] = "held_set"  # written as released, so every replica forgets it

    def flush(self) -> None:
        self.local.flush()
        if self._unpushed:
            self.want_sync()

    # -- keeping in step ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Read the shared pins before the first tools are judged (bounded by the link's timeout),
        then keep in step in the background."""
        self.local.pins()  # the local copy read first: it is what counts while Redis cannot be read
        await self.sync()
        if self._poller is None:
            self._poller = asyncio.create_task(self._poll(), name="tool-pins-sync")

    async def close(self) -> None:
        for task in (self._poller, self._task, *self._published):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._poller = self._task = None

    def want_sync(self) -> None:
        """Sync soon (coalesced: at most one running and one more after it)."""
        self._wanted = True
        if self._task is None or self._task.done():
            with contextlib.suppress(RuntimeError):  # no loop (a synchronous test): the next start syncs
                self._task = asyncio.get_running_loop().create_task(self._sync_while_wanted())

    async def _sync_while_wanted(self) -> None:
        while self._wanted:
            self._wanted = False
            await self.sync()

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.sync_interval)
            self.want_sync()

    def _on_event(self, event: dict[str, Any]) -> None:
        if event.get("type") in (EVENT_TYPE, "resubscribed"):
            self.want_sync()

    def _on_link(self, up: bool) -> None:
        if up:
            self.want_sync()

    async def sync(self) -> bool:
        """Push what changed here, pull what changed elsewhere; False when Redis could not be used
        (the mirror is then left exactly as it was)."""
        async with self._lock:
            try:
                wrote, lost = await self._push()
                changed = await self._pull() or lost
            except RedisUnavailableError as exc:
                if not self._outage_logged:
                    self._outage_logged = True
                    logger.warning(
                        "tool pins: redis is unavailable (%s): judging by this replica's copy %s; "
                        "nothing is held or released because of it, and what is pinned or approved "
                        "here is shared when it is back",
                        exc,
                        self.local.path,
                    )
                return False
        if self._outage_logged:
            self._outage_logged = False
            logger.warning("tool pins: shared through redis again (revision %d)", self.rev)
        self.synced_at = time.time()
        if wrote:
            self._publish()
        if changed:
            self.pulled += 1
            self.local.flush()
            self.on_change()
        return True

    async def _push(self) -> tuple[bool, bool]:
        """Write the unpushed changes (all of the mirror when Redis has data of another epoch).
        Returns whether anything was written, and whether a pin written first elsewhere was adopted."""
        ops, self._unpushed = self._unpushed, {}
        try:
            epoch, created, lost = await self._run_write(ops)
            if created or (self.epoch is not None and epoch != self.epoch):
                # Redis is new or lost its data (restarted empty): write the mirror back; the
                # first-sight rule (HSETNX) keeps what another replica wrote back first.
                logger.info("tool pins: writing this replica's %d pins to redis", len(self.local.pins()))
                everything: dict[tuple[str, str], Op] = {
                    ("p", self._field_of(pin)): "pin_nx" for pin in self.local.pins()
                }
                if created:
                    everything.update({("h", found): "held_nx" for found in self.local.held})
                _, _, more = await self._run_write(everything)
                lost += more
        except RedisUnavailableError:
            for key, op in ops.items():  # kept for the next try; newer changes made meanwhile win
                self._unpushed.setdefault(key, op)
            raise
        adopted = [self._adopt_pin(field, raw) for field, raw in lost]
        return bool(ops), any(adopted)

    async def _run_write(self, ops: dict[tuple[str, str], Op]) -> tuple[str, bool, list[tuple[str, str]]]:
        items = list(ops.items())
        epoch, created, lost = "", False, []
        for start in range(0, max(len(items), 1), PUSH_BATCH):
            args: list[Any] = [uuid.uuid4().hex, self.max_pins, MAX_HELD]
            for (kind, field), op in items[start : start + PUSH_BATCH]:
                value = self._value(kind, field, op)
                if value is not None:
                    args += [op, field, value]
            answer = await self.link.run(self._writer(args))
            epoch, created = _text(answer[0]), created or bool(answer[1])
            lost += _pairs(answer[3])
        return epoch, created, lost

    def _writer(self, args: list[Any]) -> Callable[[Any], Awaitable[Any]]:
        def write(client: Any) -> Awaitable[Any]:
            return self._write(keys=self.keys, args=args, client=client)

        return write

    def _value(self, kind: str, field: str, op: Op) -> str | None:
        if kind == "p":
            key = self._pin_keys.get(field)
            pin = self.local.get(*key) if key is not None else None
            return _compact(pin.as_json()) if pin is not None else None
        record = self.local.held.get(field)
        if op == "held_set" and record is None:
            return _compact({"released": True, "since": time.time()})
        return _compact(record) if record is not None else None

    def _field_of(self, pin: Pin) -> str:
        field = pin_field(pin.key)
        self._pin_keys[field] = pin.key
        return field

    async def _pull(self) -> bool:
        """Apply what other replicas wrote since the last pull (all of it when the epoch is not the
        one last read: this replica is new, or Redis lost its data); True when the mirror changed."""
        answer = await self.link.run(
            lambda client: self._read(keys=self.keys, args=[self.rev, self.epoch or ""], client=client)
        )
        epoch, rev, how = _text(answer[0]), int(_text(answer[1])), _text(answer[2])
        changed = False
        for field, raw in _pairs(answer[3]):
            changed = self._adopt_pin(field, raw) or changed
        theirs = dict(_pairs(answer[4]))
        if how == "full":
            for found in [found for found in self.local.held if found not in theirs]:
                if ("h", found) not in self._unpushed:
                    self.local.forget_held(found)
                    changed = True
        for found, raw in theirs.items():
            changed = self._adopt_held(found, raw) or changed
        self.epoch, self.rev = epoch or self.epoch, rev
        return changed

    def _adopt_pin(self, field: str, raw: str) -> bool:
        if ("p", field) in self._unpushed:
            return False  # changed here meanwhile: ours goes out next
        try:
            pin = Pin.from_json(json.loads(raw))
        except (KeyError, TypeError, ValueError):
            logger.warning("tool pins: ignoring an unreadable pin in redis (%s)", field[:120])
            return False
        mine = self.local.get(*pin.key)
        self._pin_keys[field] = pin.key
        if mine is not None and mine.digest == pin.digest and mine.approved == pin.approved:
            return False
        if mine is not None:
            pin.seen_at = max(pin.seen_at, mine.seen_at)
        self.local.put(pin)
        return True

    def _adopt_held(self, found: str, raw: str) -> bool:
        if ("h", found) in self._unpushed:
            return False
        try:
            record = json.loads(raw)
        except ValueError:
            return False
        if not isinstance(record, dict):
            return False
        if record.get("released"):
            if found in self.local.held:
                self.local.forget_held(found)
                return True
            return False
        if found in self.local.held or not isinstance(record.get("server"), str):
            return False
        self.local.put_held(found, record)
        return True

    def _publish(self) -> None:
        task = asyncio.get_running_loop().create_task(self.bus.publish({"type": EVENT_TYPE, "rev": self.rev}))
        self._published.add(task)
        task.add_done_callback(self._published.discard)

    def status(self) -> dict[str, Any]:
        """For /api/stores: which revision this replica follows and what it has not written yet."""
        return {
            "location": self.location,
            "revision": self.rev,
            "unpushed": len(self._unpushed),
            "pulled": self.pulled,
            "synced_at": self.synced_at,
            "pins": len(self.local.pins()),
        }
