"""The recorder's write-ahead journal: an item is on disk before `record`/`outcome` return,
the segment goes once the batch holding it is committed (and stays while the database is
down), a dead process's segment is adopted once and written once, and damaged lines (a torn
last line from a kill mid-write, zeros, garbage) are skipped with a log line."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError

from console.placement.engine import journal
from console.placement.engine.journal import SUFFIX, Journal
from console.placement.engine.recorder import Recorder
from console.placement.engine.writer import utcnow, write_to_database
from console.placement.models import DecisionRecord
from tests.console.placement.test_recorder import _row

REPO = Path(__file__).resolve().parents[4]


class Database:
    """What `write_to_database` does, in memory: inserts skip known ids, outcomes set their
    record's outcome columns. `down` makes every write fail as a lost connection does."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.inserts = 0
        self.down = False

    def write(self, records: list[dict[str, Any]], outcomes: list[dict[str, Any]]) -> None:
        if self.down:
            raise OperationalError("connection refused")
        for row in records:
            self.inserts += 1
            self.rows.setdefault(row["id"], dict(row))
        for update in outcomes:
            if update["id"] in self.rows:
                self.rows[update["id"]].update(update)


def _recorder(directory: Path, db: Database, **extra: Any) -> Recorder:
    return Recorder(
        write_batch=db.write, publish=lambda *_: None, journal=Journal(directory), **extra
    )


def _outcome(decision_id: str) -> dict[str, Any]:
    return {
        "id": decision_id,
        "ttft_ms": 120.0,
        "e2e_ms": 900.0,
        "ok": True,
        "slo_met": True,
        "outcome_at": utcnow(),
    }


def _segments(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"*{SUFFIX}"))


def _lines(directory: Path) -> list[bytes]:
    return [line for path in _segments(directory) for line in path.read_bytes().splitlines()]


def test_an_item_is_on_disk_before_record_returns(tmp_path: Path) -> None:
    recorder = _recorder(tmp_path, Database())
    recorder.record(_row("a" * 32), dict)
    recorder.outcome(_outcome("a" * 32))
    (segment,) = _segments(tmp_path)
    assert segment.name.startswith(f"{os.getpid()}-")
    lines = segment.read_bytes().splitlines()
    assert [line[:6] for line in lines] == [b'{"r":{', b'{"o":{']
    assert b"a" * 32 in lines[0] and b"a" * 32 in lines[1]


def test_a_committed_batch_deletes_its_segment_and_new_items_start_another(
    tmp_path: Path,
) -> None:
    db = Database()
    recorder = _recorder(tmp_path, db)
    recorder.record(_row("a" * 32), dict)
    (first,) = _segments(tmp_path)
    assert recorder.flush()
    assert "a" * 32 in db.rows and _segments(tmp_path) == []
    recorder.record(_row("b" * 32), dict)
    (second,) = _segments(tmp_path)
    assert second != first


def test_the_segment_stays_while_the_database_is_down_and_goes_once_written(
    tmp_path: Path,
) -> None:
    db = Database()
    recorder = _recorder(tmp_path, db)
    db.down = True
    recorder.record(_row("a" * 32), dict)
    assert not recorder.flush()
    recorder.record(_row("b" * 32), dict)  # into a new segment: the first one is sealed
    recorder.outcome(_outcome("a" * 32))
    assert not recorder.flush()
    assert len(_lines(tmp_path)) == 3
    db.down = False
    assert recorder.flush()
    assert sorted(db.rows) == ["a" * 32, "b" * 32] and db.rows["a" * 32]["ok"] is True
    assert _segments(tmp_path) == []


def test_a_live_processs_segment_is_not_adopted(tmp_path: Path) -> None:
    owner = _recorder(tmp_path, Database())
    owner.record(_row("a" * 32), dict)
    other_db = Database()
    other = _recorder(tmp_path, other_db)
    assert other.adopt() == 0
    assert other.backlog() == 0 and len(_segments(tmp_path)) == 1


def _killed_writer(directory: Path, ids: list[str]) -> None:
    """A process that journals a record and an outcome per id, then is SIGKILLed."""
    script = (
        "import os, signal, sys\n"
        "from console.placement.engine.journal import Journal\n"
        "from tests.console.placement.engine.test_journal import _outcome\n"
        "from tests.console.placement.test_recorder import _row\n"
        "journal = Journal(sys.argv[1])\n"
        "for i in sys.argv[2:]:\n"
        "    journal.append('r', _row(i))\n"
        "    journal.append('o', _outcome(i))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "console.settings"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + script, str(directory), *ids],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_a_killed_processs_segment_is_adopted_written_once_and_deleted(tmp_path: Path) -> None:
    ids = [f"{i:032x}" for i in range(3)]
    _killed_writer(tmp_path, ids)
    (orphan,) = _segments(tmp_path)
    db = Database()
    recorder = _recorder(tmp_path, db)
    assert recorder.adopt() == 6
    assert not orphan.exists()
    assert len(_lines(tmp_path)) == 6  # copied into the adopter's own segment first
    assert recorder.adopt() == 0  # its own segment is locked: never adopted twice
    assert recorder.flush()
    assert sorted(db.rows) == ids and all(row["ok"] is True for row in db.rows.values())
    assert db.rows[ids[0]]["created_at"].tzinfo is not None  # datetimes come back as such
    assert _segments(tmp_path) == []


@pytest.mark.django_db(transaction=True)
def test_replaying_what_was_already_written_writes_each_item_once(tmp_path: Path) -> None:
    """A kill between the commit and the segment's deletion (or between an adopter's copy and
    the orphan's deletion) replays written items: the database holds each once."""
    ids = [f"{i:032x}" for i in range(3)]
    _killed_writer(tmp_path, ids)
    write_to_database([_row(i) for i in ids[:2]], [_outcome(ids[0])])
    recorder = Recorder(
        write_batch=write_to_database, publish=lambda *_: None, journal=Journal(tmp_path)
    )
    assert recorder.adopt() == 6
    assert recorder.flush()
    assert sorted(DecisionRecord.objects.values_list("id", flat=True)) == ids
    assert DecisionRecord.objects.filter(ok=True, ttft_ms=120).count() == 3
    assert _segments(tmp_path) == []


def test_a_torn_last_line_is_skipped_with_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    owner = Journal(tmp_path)
    owner.append("r", _row("a" * 32))
    owner.append("r", _row("b" * 32))
    owner.close(delete=False)  # its owner gone: the lock is free
    (orphan,) = _segments(tmp_path)
    data = orphan.read_bytes()
    orphan.write_bytes(data[: len(data) - 40])  # killed in the middle of the second write
    db = Database()
    recorder = _recorder(tmp_path, db)
    with caplog.at_level(logging.WARNING, "console.placement.engine.journal"):
        assert recorder.adopt() == 1
    assert "ends in a torn line" in caplog.text
    assert recorder.flush() and sorted(db.rows) == ["a" * 32]


def test_zeros_and_garbage_lines_are_skipped_with_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    owner = Journal(tmp_path)
    owner.append("r", _row("a" * 32))
    owner.close(delete=False)
    (orphan,) = _segments(tmp_path)
    with orphan.open("ab") as file:
        file.write(b"\0" * 64 + b"\n")  # what a filesystem may leave after a crash
        file.write(b'{"x": 1}\n[1, 2]\n{"r": {"no": "id"}}\nnot json\n')
    orphan_owner = Journal(tmp_path)
    orphan_owner.append("o", _outcome("a" * 32))
    orphan_owner.close(delete=False)
    db = Database()
    recorder = _recorder(tmp_path, db)
    with caplog.at_level(logging.WARNING, "console.placement.engine.journal"):
        assert recorder.adopt() == 2
    assert caplog.text.count("is damaged") == 5
    assert recorder.flush() and db.rows["a" * 32]["ok"] is True


def test_items_dropped_from_memory_are_read_back_from_the_journal(tmp_path: Path) -> None:
    """Past `max_buffer` the oldest items leave memory, but not the journal: once the
    database is back, the segments holding them are adopted and written."""
    db = Database()
    recorder = _recorder(tmp_path, db, max_buffer=2)
    db.down = True
    ids = [f"{i:032x}" for i in range(5)]
    for i in ids:
        recorder.record(_row(i), dict)
    assert recorder.stats.dropped == 3 and not recorder.flush()
    db.down = False
    assert recorder.flush()
    assert sorted(db.rows) == ids[3:]
    assert recorder.adopt() == 5  # the kept segment, unlocked
    assert recorder.flush() and sorted(db.rows) == ids
    assert _segments(tmp_path) == []


def test_stop_deletes_the_journal_once_all_is_written(tmp_path: Path) -> None:
    db = Database()
    recorder = _recorder(tmp_path, db)
    recorder.start()
    recorder.record(_row("a" * 32), dict)
    recorder.stop()
    assert "a" * 32 in db.rows and _segments(tmp_path) == []


def test_stop_leaves_the_journal_when_the_database_is_down(tmp_path: Path) -> None:
    db = Database()
    recorder = _recorder(tmp_path, db)
    db.down = True
    recorder.record(_row("a" * 32), dict)
    recorder.stop()
    db.down = False
    successor = _recorder(tmp_path, db)
    assert successor.adopt() == 1 and successor.flush()
    assert "a" * 32 in db.rows


def test_a_failing_disk_fails_no_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk: the item is kept in memory only (logged once), and the next line starts
    a new segment rather than continuing a torn one."""
    db = Database()
    recorder = _recorder(tmp_path, db)
    recorder.record(_row("a" * 32), dict)
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, data[:10]))
    with caplog.at_level(logging.WARNING, "console.placement.engine.recorder"):
        recorder.record(_row("b" * 32), dict)
        recorder.record(_row("c" * 32), dict)
    assert caplog.text.count("decision record journal unavailable") == 1
    monkeypatch.setattr(os, "write", real_write)
    recorder.record(_row("d" * 32), dict)
    assert len(_segments(tmp_path)) == 3  # each torn one sealed, then a whole one
    assert recorder.flush()
    assert sorted(db.rows) == [c * 32 for c in "abcd"] and _segments(tmp_path) == []


def test_outcomes_wait_while_their_records_wait(tmp_path: Path) -> None:
    """A flush takes at most `batch_size * 10` records; an outcome taken before its record
    would update no row and be lost (after an outage, or adopting a large segment)."""
    db = Database()
    recorder = _recorder(tmp_path, db, batch_size=1)
    ids = [f"{i:032x}" for i in range(15)]
    for i in ids:
        recorder.record(_row(i), dict)
    recorder.outcome(_outcome(ids[-1]))
    assert recorder.flush() and len(db.rows) == 10 and recorder.backlog() == 6
    assert recorder.flush() and db.rows[ids[-1]]["ok"] is True


def test_a_large_segment_is_adopted_in_chunks_and_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The adopter queues a segment a chunk at a time (it holds the request path's lock for
    each), and all of it, even past the recorder's room."""
    monkeypatch.setattr(journal, "ADOPT_CHUNK", 2)
    owner = Journal(tmp_path)
    ids = [f"{i:032x}" for i in range(5)]
    for i in ids:
        owner.append("r", _row(i))
    owner.close(delete=False)
    db = Database()
    recorder = _recorder(tmp_path, db, max_buffer=1)
    taken: list[int] = []
    take = recorder._take

    def counting(lines: list[bytes], *items: list[dict[str, Any]]) -> bool:
        taken.append(len(lines))
        return take(lines, *items)

    monkeypatch.setattr(recorder, "_take", counting)
    assert recorder.adopt() == 5 and taken == [2, 2, 1]
    assert recorder.flush() and sorted(db.rows) == ids
