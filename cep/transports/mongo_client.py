"""MongoDB client basics shared by the key-state store (:mod:`migration.store`) and the
event writer (:mod:`cep.transports.mongo_write`): URIs with their passwords masked, client
options where the URI wins, one-line errors, a client that Spark can ship to executors,
and the parts of the string ``_id`` s both build.

Errors: every operation maps pymongo's exceptions to :class:`StoreError` subclasses
with one line naming the operation and the URI with its password masked. An
unreachable server raises :class:`MongoUnavailableError` after the server-selection
timeout, never hangs and never shows a pymongo traceback.

Writes use ``w: "majority"`` and ``j: true`` unless the URI sets ``w`` or ``journal``:
a document acknowledged and then lost could not be rewritten by its writer (a handoff
document or an event of a batch that committed is never written again), whether the
loss comes from a replica-set fail-over (hence majority) or from a server killed before
its journal reached the disk (hence j; measured on SecantusDB without it: SIGKILL right
after an acknowledged upsert lost it in 5 of 10 trials, with it in none, at ~3 ms per
batch). Likewise the time-outs are defaults that an option spelled in the URI overrides
(pymongo itself would let the keyword win), so the URI is the one place where a
deployment's settings live. Credentials and TLS come only from the URI; the password is
never logged or put in a message.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote

import numpy as np
from pymongo import MongoClient
from pymongo.errors import ConnectionFailure, PyMongoError

# Batch numbers, map versions and sequence numbers are zero-padded so string order is
# numeric order.
_NUM_WIDTH = 12
_MAX_NUM = 10**_NUM_WIDTH
_INT64 = (-(2**63), 2**63 - 1)
# URI options whose values are secrets (compared lower-case).
_SECRET_OPTIONS = ("password", "authmechanismproperties", "secret", "token")


class StoreError(RuntimeError):
    """A MongoDB operation (of the state store or the event writer) failed; the message is
    one line and holds no password."""


class MongoUnavailableError(StoreError):
    """MongoDB could not be reached within the configured timeouts."""


def _userinfo_span(uri: str) -> tuple[int, int] | None:
    """(start, end) of ``user:password`` in a mongodb URI, or None without one.

    The last ``@`` before the query string ends the user info, so a password with a
    raw ``@`` or ``/`` (invalid, but people write it) is still found whole.
    """
    scheme_end = uri.find("://")
    if scheme_end < 0:
        return None
    start = scheme_end + 3
    query = uri.find("?", start)
    at = uri.rfind("@", start, query if query >= 0 else len(uri))
    return (start, at) if at >= 0 else None


def mask_uri(uri: str) -> str:
    """The URI with its password (and secret-valued options) replaced by ``***``.

    >>> mask_uri("mongodb://user:s3cret@db1:27017,db2/cep?authSource=admin")
    'mongodb://user:***@db1:27017,db2/cep?authSource=admin'
    """
    span = _userinfo_span(uri)
    if span is not None:
        start, end = span
        user, sep, _password = uri[start:end].partition(":")
        if sep:
            uri = f"{uri[:start]}{user}:***{uri[end:]}"
    base, sep, query = uri.partition("?")
    if not sep:
        return uri
    options = []
    for option in query.split("&"):
        name, eq, _value = option.partition("=")
        secret = bool(eq) and any(word in name.lower() for word in _SECRET_OPTIONS)
        options.append(f"{name}=***" if secret else option)
    return f"{base}?{'&'.join(options)}"


def _secrets(uri: str) -> list[str]:
    """The password as written and percent-decoded, to scrub from driver messages."""
    span = _userinfo_span(uri)
    if span is None:
        return []
    _user, sep, password = uri[span[0] : span[1]].partition(":")
    return [p for p in {password, unquote(password)} if sep and p]


def open_client(uri: str, defaults: Mapping[str, Any]) -> MongoClient:
    """A client with ``defaults`` for the options the URI does not spell (the URI wins,
    where pymongo would let the keyword win), so a deployment's settings live in it.

    The URI's options are read from its raw query: pymongo's parse_uri resolves
    mongodb+srv names over DNS, which the client is about to do anyway.
    """
    query = uri.partition("?")[2]
    in_uri = {opt.partition("=")[0].lower() for opt in query.split("&")}
    return MongoClient(uri, **{k: v for k, v in defaults.items() if k.lower() not in in_uri})


def selection_timeout_ms(client: MongoClient | None, default_ms: int) -> int:
    """The server-selection time-out a client uses (``default_ms`` before it exists)."""
    if client is None:
        return default_ms
    return round(client.options.server_selection_timeout * 1000)


def driver_reason(uri: str, exc: BaseException) -> str:
    """The driver's message, first part only (it appends the whole topology), with the
    URI's password scrubbed."""
    text = str(exc).split(", Timeout:")[0].split(" (configured timeouts")[0]
    for secret in _secrets(uri):
        text = text.replace(secret, "***")
    text = " ".join(text.split())
    return f"{type(exc).__name__}: {text[:300]}"


@contextmanager
def mongo_errors(uri: str, operation: str, selection_timeout_ms: Callable[[], int]
                 ) -> Iterator[None]:
    """Turn any pymongo failure inside into a one-line :class:`StoreError` naming the
    operation and the masked URI; ``selection_timeout_ms()`` gives the time-out in
    force when it fails (asked then: the client may be created inside)."""
    try:
        yield
    except ConnectionFailure as exc:
        raise MongoUnavailableError(
            f"MongoDB unreachable at {mask_uri(uri)} during {operation} "
            f"(server selection timeout {selection_timeout_ms()} ms): "
            f"{driver_reason(uri, exc)}"
        ) from None
    except PyMongoError as exc:
        raise StoreError(
            f"MongoDB {operation} failed at {mask_uri(uri)}: {driver_reason(uri, exc)}"
        ) from None


def key_part(key: int | str) -> tuple[int | str, str]:
    """(key normalised to int or str, type tag ``i`` or ``s``) for a string ``_id``: the tag
    keeps the int key 5 and the str key ``"5"`` apart. numpy integers count as int."""
    if isinstance(key, bool):
        raise TypeError(f"state keys must be int or str, not bool ({key!r})")
    if isinstance(key, int | np.integer):
        value = int(key)
        if not _INT64[0] <= value <= _INT64[1]:
            raise ValueError(f"int key {value} does not fit in 64 bits")
        return value, "i"
    if isinstance(key, str):
        return key, "s"
    raise TypeError(f"state keys must be int or str, not {type(key).__name__} ({key!r})")


def number_part(name: str, value: int) -> str:
    """``value`` zero-padded for a string ``_id``, so that string order is numeric order
    (``name`` is for the error)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < _MAX_NUM:
        raise ValueError(f"{name} must be in [0, {_MAX_NUM}), got {value}")
    return f"{int(value):0{_NUM_WIDTH}d}"


# (process, URI, options) -> the one client every shipped copy in that process uses
_SHARED_CLIENTS: dict[tuple[int, str, tuple[tuple[str, Any], ...]], MongoClient] = {}
_SHARED_LOCK = threading.Lock()


def close_shared_clients() -> None:
    """Close the clients this process's shipped copies share; their next use opens anew.

    Executor tasks call it when they end. A Python worker outlives its task and its run,
    and the MongoDB a run used (an embedded server) may be gone: a client left behind
    keeps connecting to that server's old 127.0.0.1 port, and when Spark later gives
    the same port to a stateful task's state server, which serves the first connection
    it accepts, the client's hello reached the state server before the engine's worker
    did; the server's thread died on a malformed request and the task waited for ever."""
    with _SHARED_LOCK:
        mine = [key for key in _SHARED_CLIENTS if key[0] == os.getpid()]
        clients = [_SHARED_CLIENTS.pop(key) for key in mine]
    for client in clients:
        client.close()


class ProcessLocalClient:
    """A MongoDB client that each process opens for itself on first use.

    Picklable: Spark ships these objects to executors, and a ``MongoClient`` must not
    cross a fork or a pickle, so the client is dropped on pickling and reopened (with
    cep's write concern and the time-outs, the URI's own options winning) in the
    process that next needs it. Every task unpickles its own copy, so the copies in a
    process share one client: one each would leave a client, with its monitor threads
    and connections, behind for every task (a Python worker runs many), all waking to
    poll the server and competing for the worker's GIL. Shared by the state store and
    the event writer."""

    APPNAME = "cep"

    def __init__(self, uri: str, *, connect_timeout_ms: int, server_selection_timeout_ms: int,
                 socket_timeout_ms: int) -> None:
        self.uri = uri
        self.connect_timeout_ms = connect_timeout_ms
        self.server_selection_timeout_ms = server_selection_timeout_ms
        self.socket_timeout_ms = socket_timeout_ms
        self._client: MongoClient | None = None
        self._client_pid = 0
        self._lock = threading.Lock()
        self._shipped = False  # a copy that came through pickle: shares its process's client

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_client=None, _client_pid=0, _lock=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._shipped = True

    def _options(self) -> dict[str, Any]:
        return {"connectTimeoutMS": self.connect_timeout_ms,
                "serverSelectionTimeoutMS": self.server_selection_timeout_ms,
                "socketTimeoutMS": self.socket_timeout_ms,
                "appname": self.APPNAME, "w": "majority", "journal": True}

    def _process_client(self) -> MongoClient:
        with self._lock:
            if self._shipped:  # looked up each time: tasks close the shared ones as they end
                self._client = self._shared_client()
            elif self._client is None or self._client_pid != os.getpid():
                self._client = open_client(self.uri, self._options())
                self._client_pid = os.getpid()
            return self._client

    def _shared_client(self) -> MongoClient:
        options = self._options()
        key = (os.getpid(), self.uri, tuple(sorted(options.items())))
        with _SHARED_LOCK:
            client = _SHARED_CLIENTS.get(key)
            if client is None:
                client = _SHARED_CLIENTS[key] = open_client(self.uri, options)
            return client

    def close(self) -> None:
        """Close this process's client (a later use opens a new one); a shipped copy
        only lets go of the client its process's other copies still use."""
        with self._lock:
            if self._client is not None and not self._shipped:
                self._client.close()
            self._client = None
