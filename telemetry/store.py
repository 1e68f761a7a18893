"""The small key-value store behind fresh state, counter history and SLO windows.

Redis when LOCUS_TELEMETRY_STATE_URL (default: REDIS_URL) is a redis:// URL; a SQLite file
for a sqlite:/// URL (the embedded default: web, worker and beat are separate processes and
must share it); a dict in this process for memory:// (tests). Only hashes, sets and counters
are used, so the three behave the same. Redis calls time out quickly and
callers treat a failure as "no state": a slow Redis degrades freshness, never ingest.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Protocol

import redis

from telemetry import conf

StoreError = (redis.RedisError, OSError, sqlite3.Error)


class Store(Protocol):
    prefix: str

    def hset(self, key: str, mapping: dict[str, str]) -> None: ...
    def hgetall_many(self, keys: list[str]) -> list[dict[str, str]]: ...
    def hset_many(self, writes: dict[str, dict[str, str]]) -> None: ...
    def hdel(self, key: str, fields: list[str]) -> None: ...
    def hincrby(self, key: str, incr: dict[str, int], ttl_s: int) -> None: ...
    def sadd(self, key: str, members: list[str]) -> None: ...
    def smembers(self, key: str) -> set[str]: ...
    def clear(self) -> None: ...


class MemoryStore:
    """A process-local store with the same operations (embedded defaults, tests)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._hashes: dict[str, dict[str, str]] = {}
        self._sets: dict[str, set[str]] = {}
        self._expires: dict[str, float] = {}
        self._lock = threading.Lock()

    def _live(self, key: str) -> dict[str, str]:
        expiry = self._expires.get(key)
        if expiry is not None and expiry < time.monotonic():
            self._hashes.pop(key, None)
            self._expires.pop(key, None)
        return self._hashes.get(key, {})

    def hset(self, key: str, mapping: dict[str, str]) -> None:
        with self._lock:
            self._hashes.setdefault(key, {}).update(mapping)

    def hset_many(self, writes: dict[str, dict[str, str]]) -> None:
        for key, mapping in writes.items():
            self.hset(key, mapping)

    def hgetall_many(self, keys: list[str]) -> list[dict[str, str]]:
        with self._lock:
            return [dict(self._live(k)) for k in keys]

    def hdel(self, key: str, fields: list[str]) -> None:
        with self._lock:
            for f in fields:
                self._hashes.get(key, {}).pop(f, None)

    def hincrby(self, key: str, incr: dict[str, int], ttl_s: int) -> None:
        with self._lock:
            current = self._hashes.setdefault(key, dict(self._live(key)))
            for f, n in incr.items():
                current[f] = str(int(current.get(f, "0")) + n)
            self._expires[key] = time.monotonic() + ttl_s

    def sadd(self, key: str, members: list[str]) -> None:
        with self._lock:
            self._sets.setdefault(key, set()).update(members)

    def smembers(self, key: str) -> set[str]:
        with self._lock:
            return set(self._sets.get(key, set()))

    def clear(self) -> None:
        with self._lock:
            self._hashes.clear()
            self._sets.clear()
            self._expires.clear()


class RedisStore:
    """The shared store: one Redis, keys under `prefix`."""

    def __init__(self, url: str, prefix: str) -> None:
        self.prefix = prefix
        self._redis = redis.Redis.from_url(
            url, decode_responses=True, socket_timeout=1.0, socket_connect_timeout=1.0
        )

    def hset(self, key: str, mapping: dict[str, str]) -> None:
        if mapping:
            self._redis.hset(key, mapping=mapping)  # type: ignore[arg-type]

    def hset_many(self, writes: dict[str, dict[str, str]]) -> None:
        pipe = self._redis.pipeline(transaction=False)
        for key, mapping in writes.items():
            if mapping:
                pipe.hset(key, mapping=mapping)  # type: ignore[arg-type]
        pipe.execute()

    def hgetall_many(self, keys: list[str]) -> list[dict[str, str]]:
        pipe = self._redis.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(key)
        return list(pipe.execute())

    def hdel(self, key: str, fields: list[str]) -> None:
        if fields:
            self._redis.hdel(key, *fields)

    def hincrby(self, key: str, incr: dict[str, int], ttl_s: int) -> None:
        pipe = self._redis.pipeline(transaction=False)
        for f, n in incr.items():
            pipe.hincrby(key, f, n)
        pipe.expire(key, ttl_s)
        pipe.execute()

    def sadd(self, key: str, members: list[str]) -> None:
        if members:
            self._redis.sadd(key, *members)

    def smembers(self, key: str) -> set[str]:
        return set(self._redis.smembers(key))  # type: ignore[arg-type]

    def clear(self) -> None:
        keys = list(self._redis.scan_iter(match=f"{self.prefix}:*", count=1000))
        for start in range(0, len(keys), 500):
            self._redis.delete(*keys[start : start + 500])


class SqliteStore:
    """Hashes and sets in one SQLite file, shared by the processes of one machine.

    WAL mode lets readers proceed while a writer commits; each call is one short transaction.
    A connection per thread, since sqlite3 connections are not shared across threads.
    """

    def __init__(self, path: str, prefix: str) -> None:
        self.prefix = prefix
        self.path = path
        self._local = threading.local()
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS hashes (key TEXT, field TEXT, value TEXT, "
                "expires REAL, PRIMARY KEY (key, field))"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS sets (key TEXT, member TEXT, PRIMARY KEY (key, member))"
            )

    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def _write(self, sql: str, rows: list[tuple[object, ...]]) -> None:
        if not rows:
            return
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(sql, rows)
            conn.execute("COMMIT")
        except sqlite3.Error:
            conn.execute("ROLLBACK")
            raise OSError("telemetry state store write failed") from None

    def hset(self, key: str, mapping: dict[str, str]) -> None:
        self.hset_many({key: mapping})

    def hset_many(self, writes: dict[str, dict[str, str]]) -> None:
        self._write(
            "INSERT INTO hashes VALUES (?, ?, ?, NULL) ON CONFLICT (key, field) "
            "DO UPDATE SET value = excluded.value",
            [(k, f, v) for k, m in writes.items() for f, v in m.items()],
        )

    def hgetall_many(self, keys: list[str]) -> list[dict[str, str]]:
        found: dict[str, dict[str, str]] = {k: {} for k in keys}
        now = time.time()
        conn = self._connect()
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, f, value in conn.execute(
                f"SELECT key, field, value FROM hashes WHERE key IN ({marks}) "  # noqa: S608
                "AND (expires IS NULL OR expires > ?)",
                [*chunk, now],
            ):
                found[key][f] = value
        return [found[k] for k in keys]

    def hdel(self, key: str, fields: list[str]) -> None:
        self._write("DELETE FROM hashes WHERE key = ? AND field = ?", [(key, f) for f in fields])

    def hincrby(self, key: str, incr: dict[str, int], ttl_s: int) -> None:
        expires = time.time() + ttl_s
        self._write(
            "INSERT INTO hashes VALUES (?, ?, ?, ?) ON CONFLICT (key, field) DO UPDATE "
            "SET value = CAST(CAST(value AS INTEGER) + CAST(excluded.value AS INTEGER) "
            "AS TEXT), expires = excluded.expires",
            [(key, f, str(n), expires) for f, n in incr.items()],
        )

    def sadd(self, key: str, members: list[str]) -> None:
        self._write("INSERT OR IGNORE INTO sets VALUES (?, ?)", [(key, m) for m in members])

    def smembers(self, key: str) -> set[str]:
        rows = self._connect().execute("SELECT member FROM sets WHERE key = ?", (key,))
        return {member for (member,) in rows}

    def clear(self) -> None:
        self._write("DELETE FROM hashes WHERE key LIKE ?", [(f"{self.prefix}:%",)])
        self._write("DELETE FROM sets WHERE key LIKE ?", [(f"{self.prefix}:%",)])


def _make_store(url: str, prefix: str) -> Store:
    if url.startswith("memory:"):
        return MemoryStore(prefix)
    if url.startswith("sqlite:///"):
        return SqliteStore(url.removeprefix("sqlite:///"), prefix)
    return RedisStore(url, prefix)


_stores: dict[tuple[str, str], Store] = {}
_stores_lock = threading.Lock()


def get_store() -> Store:
    """The store the settings name (one per URL and prefix, made on first use)."""
    url, prefix = conf.state_url(), conf.state_prefix()
    with _stores_lock:
        store = _stores.get((url, prefix))
        if store is None:
            store = _make_store(url, prefix)
            _stores[(url, prefix)] = store
        return store
