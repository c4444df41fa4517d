"""Many calls on a Spark ``MapState`` per socket round trip.

PySpark's ``MapState`` (``transformWithStateInPandas``) sends each ``getValue``,
``updateValue`` and ``removeKey`` to the JVM's state server over a local socket and waits
for its answer before the next call. An engine reads and writes every key its batch
touches, so at thousands of keys per batch those waits, not the state store, set the
cost: about 0.2–0.3 ms per call.

The state server reads the requests on its socket one after another and answers each
in turn, so a worker may write many requests back to back and then read their answers
in the same order. :class:`MapCalls` does that in chunks, built from the same protobuf
messages and serialisers PySpark's own client uses. A chunk never risks both sides
waiting on full socket buffers: reads send small requests (at most ``REQUEST_BYTES``
of them before reading answers, whatever the values' size) and writes get small
answers (a status each, at most ``CHUNK`` of them).

This uses PySpark's client internals (``MapState._mapStateClient`` and its API
client). Where they are not there (another PySpark), it falls back to the public
one-call-per-round-trip methods, which give the same results.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pyspark.errors import PySparkRuntimeError
from pyspark.serializers import write_int

CHUNK = 512  # requests written before their answers are read
REQUEST_BYTES = 32 << 10  # a chunk of reads sends at most this much before reading
WRITE_BYTES = 4 << 20  # a chunk of writes holds at most this much of values at once


class MapCalls:
    """``getValue``/``updateValue``/``removeKey`` for many keys of one ``MapState``."""

    def __init__(self, state: Any) -> None:
        self.state = state
        client = getattr(state, "_mapStateClient", None)
        api = getattr(client, "_stateful_processor_api_client", None)
        self.pipelined = all(hasattr(o, a) for o, a in (
            (state, "_stateName"), (client, "user_key_schema"), (client, "value_schema"),
            (api, "sockfile"), (api, "_serialize_to_bytes"), (api, "_receive_proto_message"),
            (api, "_deserialize_from_bytes")))
        if self.pipelined:
            import pyspark.sql.streaming.proto.StateMessage_pb2 as messages

            self.messages = messages
            self.client, self.api, self.name = client, api, state._stateName

    def get_values(self, keys: Sequence[tuple]) -> list[tuple | None]:
        """The value of each key (``None`` where the key has none), in order."""
        if not self.pipelined:
            return [self.state.getValue(key) for key in keys]
        out: list[tuple | None] = []
        for chunk in self._chunks(map(self._get, keys), REQUEST_BYTES):
            for status, error, value in self._exchange(chunk):
                if status != 0:
                    raise PySparkRuntimeError(f"Error getting value: {error}")
                out.append(self.api._deserialize_from_bytes(value) if value else None)
        return out

    def update_values(self, items: Iterable[tuple[tuple, tuple]]) -> None:
        """Set each key's value."""
        if not self.pipelined:
            for key, value in items:
                self.state.updateValue(key, value)
            return
        self._write((self._update(key, value) for key, value in items), "updating value")

    def remove_keys(self, keys: Sequence[tuple]) -> None:
        """Remove each key and its value."""
        if not self.pipelined:
            for key in keys:
                self.state.removeKey(key)
            return
        self._write(map(self._remove, keys), "removing key")

    def _write(self, requests: Iterable[bytes], what: str) -> None:
        for chunk in self._chunks(requests, WRITE_BYTES):
            for status, error, _ in self._exchange(chunk):
                if status != 0:
                    raise PySparkRuntimeError(f"Error {what} in map state: {error}")

    @staticmethod
    def _chunks(requests: Iterable[bytes], max_bytes: int) -> Iterator[list[bytes]]:
        """At most ``CHUNK`` requests and ``max_bytes`` each (but at least one request),
        built only as they are sent."""
        chunk: list[bytes] = []
        size = 0
        for request in requests:
            if chunk and (len(chunk) == CHUNK or size + len(request) > max_bytes):
                yield chunk
                chunk, size = [], 0
            chunk.append(request)
            size += len(request) + 8
        if chunk:
            yield chunk

    def _exchange(self, chunk: list[bytes]) -> list[tuple[int, str, bytes]]:
        """Write the requests, then read their answers (status, error, value)."""
        out = self.api.sockfile
        for request in chunk:
            write_int(0, out)  # message version, as PySpark's client writes it
            write_int(len(request), out)
            out.write(request)
        out.flush()
        return [self.api._receive_proto_message() for _ in chunk]

    def _request(self, **call: Any) -> bytes:
        m = self.messages
        map_call = m.MapStateCall(stateName=self.name, **call)
        return m.StateRequest(stateVariableRequest=m.StateVariableRequest(
            mapStateCall=map_call)).SerializeToString()

    def _key(self, key: tuple) -> bytes:
        return self.api._serialize_to_bytes(self.client.user_key_schema, key)

    def _get(self, key: tuple) -> bytes:
        return self._request(getValue=self.messages.GetValue(userKey=self._key(key)))

    def _update(self, key: tuple, value: tuple) -> bytes:
        return self._request(updateValue=self.messages.UpdateValue(
            userKey=self._key(key),
            value=self.api._serialize_to_bytes(self.client.value_schema, value)))

    def _remove(self, key: tuple) -> bytes:
        return self._request(removeKey=self.messages.RemoveKey(userKey=self._key(key)))
