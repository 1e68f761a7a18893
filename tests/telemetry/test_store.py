"""The state stores behave alike: in memory, in a shared SQLite file, and in Redis."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from telemetry.store import MemoryStore, SqliteStore, Store


def _stores(tmp_path: Path) -> list[Store]:
    return [MemoryStore("t"), SqliteStore(str(tmp_path / "state.sqlite3"), "t")]


def test_hashes_sets_and_counters_behave_the_same(tmp_path: Path) -> None:
    for store in _stores(tmp_path):
        store.hset_many({"t:node:a": {"queue_depth": "3|1.0"}, "t:node:b": {"running": "2|1.0"}})
        store.hset("t:node:a", {"running": "5|2.0"})
        assert store.hgetall_many(["t:node:a", "t:node:b", "t:node:c"]) == [
            {"queue_depth": "3|1.0", "running": "5|2.0"},
            {"running": "2|1.0"},
            {},
        ]
        store.hdel("t:node:a", ["running"])
        assert store.hgetall_many(["t:node:a"]) == [{"queue_depth": "3|1.0"}]
        store.sadd("t:nodes", ["a", "b"])
        store.sadd("t:nodes", ["b"])
        assert store.smembers("t:nodes") == {"a", "b"}
        store.hincrby("t:win", {"n": 2}, ttl_s=60)
        store.hincrby("t:win", {"n": 3, "m": 1}, ttl_s=60)
        assert store.hgetall_many(["t:win"]) == [{"n": "5", "m": "1"}]
        store.clear()
        assert store.smembers("t:nodes") == set()


def test_expired_counters_vanish(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "s.sqlite3"), "t")
    store.hincrby("t:w", {"n": 1}, ttl_s=0)
    time.sleep(0.01)
    assert store.hgetall_many(["t:w"]) == [{}]


def _write_from_another_process(path: str) -> None:
    SqliteStore(path, "t").hset("t:node:x", {"queue_depth": "7|3.0"})


def test_another_process_sees_what_one_process_wrote(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite3")
    reader = SqliteStore(path, "t")
    process = multiprocessing.get_context("spawn").Process(
        target=_write_from_another_process, args=(path,)
    )
    process.start()
    process.join(30)
    assert process.exitcode == 0
    assert reader.hgetall_many(["t:node:x"]) == [{"queue_depth": "7|3.0"}]


def test_a_file_that_is_not_a_store_is_reported_as_a_store_error(tmp_path: Path) -> None:
    from telemetry.store import StoreError

    path = tmp_path / "s.sqlite3"
    path.write_bytes(b"not a database, " * 100)
    with pytest.raises(StoreError):
        SqliteStore(str(path), "t")
