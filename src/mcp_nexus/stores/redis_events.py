"""Events between replicas over Redis pub/sub (one channel, JSON messages naming their replica).

Pub/sub is fire-and-forget: a replica cut off from Redis misses what was said meanwhile. So
when the subscription comes back after a failure, the handlers hear `{"type": "resubscribed"}`
(from this replica itself) and can catch up (the list fan-out lists its upstreams again). The subscription runs on a connection of its own without a read
timeout (it is idle most of the time) and is re-opened every `retry_after` seconds while Redis is away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import orjson
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from mcp_nexus.stores.events import EventHandler
from mcp_nexus.stores.redis_link import RedisLink, RedisUnavailableError

logger = logging.getLogger(__name__)

RESUBSCRIBED = "resubscribed"


class RedisEventBus:
    def __init__(self, link: RedisLink, *, prefix: str, replica: str) -> None:
        self.link = link
        self.channel = f"{prefix}:events"
        self.replica = replica
        self.handlers: list[EventHandler] = []
        self.received = 0
        self.subscribed = False
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    def subscribe(self, handler: EventHandler) -> None:
        self.handlers.append(handler)

    async def publish(self, event: dict[str, Any]) -> None:
        data = orjson.dumps({**event, "replica": self.replica})
        with contextlib.suppress(RedisUnavailableError):  # the link logged it; the event is lost
            await self.link.run(lambda r: r.publish(self.channel, data))

    async def start(self) -> None:
        """Subscribe in the background; waits for the first attempt (at most 4 x `timeout`), so
        events published right after start are heard."""
        if self._task is None:
            self._task = asyncio.create_task(self._listen(), name="redis-events")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), self.link.timeout * 4)

    async def _listen(self) -> None:
        client = aioredis.Redis.from_url(
            self.link.url, socket_connect_timeout=self.link.timeout, socket_keepalive=True
        )
        lost = False  # a subscription failed: events may have been missed
        try:
            while True:
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                try:
                    await pubsub.subscribe(self.channel)
                    self.subscribed = True
                    self._ready.set()
                    self.link.mark_up()
                    if lost:
                        lost = False
                        self._tell({"type": RESUBSCRIBED, "replica": self.replica})
                    async for message in pubsub.listen():
                        self._deliver(message)
                except (RedisError, OSError) as exc:
                    lost = True
                    self.link.mark_down(exc)
                    self._ready.set()  # tried: start-up never waits for a Redis that is not there
                finally:
                    self.subscribed = False
                    with contextlib.suppress(Exception):
                        await pubsub.aclose()
                await asyncio.sleep(self.link.retry_after)
        finally:
            await client.aclose()

    def _deliver(self, message: dict[str, Any]) -> None:
        if message.get("type") != "message":
            return
        try:
            event = orjson.loads(message["data"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            logger.warning("ignoring an unreadable event on %s", self.channel)
            return
        if not isinstance(event, dict) or event.get("replica") == self.replica:
            return
        self.received += 1
        self._tell(event)

    def _tell(self, event: dict[str, Any]) -> None:
        for handler in list(self.handlers):
            try:
                handler(event)
            except Exception:  # one handler's bug must not deafen the others
                logger.exception("event handler failed")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
