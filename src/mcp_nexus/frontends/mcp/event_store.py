"""A bounded in-memory event store so HTTP clients can resume SSE streams (Last-Event-ID).

Bounded because a gateway runs for weeks: only the newest events are kept, per stream and
in total; a client that comes back later than that re-requests instead of replaying.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque

import mcp_types as types
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId


class BoundedEventStore(EventStore):
    def __init__(self, max_events_per_stream: int = 256, max_streams: int = 1024) -> None:
        self._per_stream = max_events_per_stream
        self._max_streams = max_streams
        self._streams: OrderedDict[StreamId, deque[tuple[int, types.JSONRPCMessage | None]]] = OrderedDict()
        self._stream_of: dict[int, StreamId] = {}
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: types.JSONRPCMessage | None) -> EventId:
        event_id = next(self._ids)
        events = self._streams.get(stream_id)
        if events is None:
            events = self._streams[stream_id] = deque()
            while len(self._streams) > self._max_streams:
                _, dropped = self._streams.popitem(last=False)
                for old_id, _message in dropped:
                    self._stream_of.pop(old_id, None)
        else:
            self._streams.move_to_end(stream_id)
        if len(events) >= self._per_stream:
            old_id, _message = events.popleft()
            self._stream_of.pop(old_id, None)
        events.append((event_id, message))
        self._stream_of[event_id] = stream_id
        return str(event_id)

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        try:
            last = int(last_event_id)
        except ValueError:
            return None
        stream_id = self._stream_of.get(last)
        if stream_id is None:
            return None
        for event_id, message in list(self._streams.get(stream_id, ())):
            if event_id > last and message is not None:
                await send_callback(EventMessage(message, str(event_id)))
        return stream_id
