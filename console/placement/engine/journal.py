"""The recorder's write-ahead journal: a decision record or outcome is on disk before the
request that made it is answered, so a decider killed outright (SIGKILL, the OOM killer, a
crash) loses none of what it answered (issue #29).

Each process appends to its own segment file under LOCUS_RECORD_JOURNAL_DIR, one JSON line
per item (`{"r": record}` or `{"o": outcome}`), with a single write(2) on an O_APPEND
descriptor. There is no fsync per line: a write(2) that returned is in the kernel's page
cache, which outlives the process, and the kernel writes it out whether or not the process
still exists. A power loss or kernel crash can lose the last seconds of lines; that is not
covered (fsync per line would cost milliseconds on the request path, fdatasync(2)).

Segments rotate when the recorder commits: `rotate` seals the current segment and starts a
new one, the recorder writes everything queued so far, and `release` then deletes the sealed
segments. A segment is held with flock(2) for as long as its owner may still need it; the
kernel drops the lock when the owner dies, so a segment nobody holds is an orphan, whatever
its file name says (robust to pid reuse, unlike a pid check). `adopt_orphans` copies each
orphan's lines into this process's own segment, hands its items to the recorder and deletes
it. Inserts skip decision ids already in the database and an outcome sets its record's
outcome columns to the same values every time, so an item replayed twice (a crash between
the copy and the delete) is written once.

The directory must be local to the host: flock over NFS is not dependable.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

logger = logging.getLogger(__name__)
SUFFIX = ".journal"
# Keys of an item that hold datetimes (orjson writes them as RFC 3339 strings).
_DATETIMES = ("created_at", "outcome_at")
Item = dict[str, Any]
# Lines an adopter queues at a time: copying and queuing a chunk holds the lock that
# `record` takes, 0.5-0.7 ms for 1,000 record lines of 1.5 KB (measured on a shared 2-core
# machine).
ADOPT_CHUNK = 1000


class Journal:
    """One process's journal segments in `directory`. Thread-safe; `append` is the only call
    on the request path."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._path: Path | None = None
        self._sealed: list[tuple[Path, int]] = []  # (path, descriptor holding its lock)
        self.appended = 0

    # -- the request path ------------------------------------------------------------------
    def append(self, kind: str, item: Item) -> None:
        """Write one line ("r" for a record, "o" for an outcome); OSError if it failed."""
        self._write(orjson.dumps({kind: item}) + b"\n")

    def write_lines(self, lines: list[bytes]) -> None:
        """Append whole lines read from another segment (`adopt_orphans`)."""
        self._write(b"".join(lines))

    def _write(self, data: bytes) -> None:
        with self._lock:
            if self._fd is None:
                self._open()
            assert self._fd is not None
            try:
                # One O_APPEND write: never interleaved with another process's or thread's.
                if os.write(self._fd, data) != len(data):
                    raise OSError(f"short write to {self._path} (disk full?)")
            except OSError:
                # Sealed as it is (a torn line is skipped when read back): the next line
                # starts a new segment instead of continuing the torn one.
                assert self._path is not None
                self._sealed.append((self._path, self._fd))
                self._fd, self._path = None, None
                raise
            self.appended += 1

    # -- the writer's side -----------------------------------------------------------------
    def rotate(self) -> int:
        """Seal the current segment (new lines go to a new one once written); the number of
        sealed segments, for `release`."""
        with self._lock:
            if self._fd is not None:
                assert self._path is not None
                self._sealed.append((self._path, self._fd))
                self._fd, self._path = None, None
            return len(self._sealed)

    def release(self, count: int, *, keep: bool = False) -> None:
        """The first `count` sealed segments are in the database: delete them. With `keep`
        (the recorder dropped items from memory, so some lines are only on disk) they are
        unlocked instead, and `adopt_orphans` reads them back once there is room."""
        with self._lock:
            done, self._sealed = self._sealed[:count], self._sealed[count:]
        for path, fd in done:
            if not keep:
                path.unlink(missing_ok=True)
            os.close(fd)

    def close(self, *, delete: bool) -> None:
        """Seal and release everything (`delete` when the recorder wrote it all)."""
        self.release(self.rotate(), keep=not delete)

    def adopt_orphans(self, take: Callable[[list[bytes], list[Item], list[Item]], bool]) -> int:
        """Hand orphan segments' lines, records and outcomes to `take` (which must
        `write_lines` them into this process's segment and queue the items, atomically with
        respect to `rotate`, and says whether it has room for more), deleting each; the
        number of items adopted."""
        if not self.directory.is_dir():
            return 0
        adopted, room = 0, True
        for path in sorted(self.directory.glob(f"*{SUFFIX}")):
            if not room:
                break
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue  # adopted by another process meanwhile
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # its owner lives (or another process adopts it now)
                if os.fstat(fd).st_nlink == 0:
                    continue  # another process adopted and deleted it before we locked it
                with os.fdopen(os.dup(fd), "rb") as file:
                    data = file.read()
                counts = [0, 0]
                for lines, records, outcomes in read_lines(data, path):
                    # Copied into ours before theirs is deleted: a kill in between leaves
                    # both, and replaying both writes each item once.
                    room = take(lines, records, outcomes)
                    counts[0] += len(records)
                    counts[1] += len(outcomes)
                path.unlink(missing_ok=True)
                adopted += sum(counts)
                logger.warning(
                    "adopted %d decision records and %d outcomes from %s, left by a process "
                    "that ended (or items that left memory) before they were written",
                    *counts,
                    path.name,
                )
            finally:
                os.close(fd)
        return adopted

    def _open(self) -> None:
        """Start a segment, locked for as long as this process lives or needs it."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{os.getpid()}-{uuid.uuid4().hex[:12]}{SUFFIX}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._fd, self._path = fd, path


def read_lines(data: bytes, path: Path) -> Iterator[tuple[list[bytes], list[Item], list[Item]]]:
    """A segment's whole lines and the records and outcomes they hold, `ADOPT_CHUNK` lines at
    a time (the adopter holds the request path's lock while it queues a chunk). A line cut
    short (the process killed mid-write: it lacks its newline) or one that is not an item
    (zeros a filesystem left after a crash, or any other damage) is skipped and logged."""
    parts = data.split(b"\n")
    if parts[-1]:
        logger.warning("%s ends in a torn line (%d bytes); skipped", path.name, len(parts[-1]))
    for start in range(0, len(parts) - 1, ADOPT_CHUNK):
        chunk = parts[start : min(start + ADOPT_CHUNK, len(parts) - 1)]
        yield _items(chunk, start + 1, path)


def _items(
    parts: list[bytes], first: int, path: Path
) -> tuple[list[bytes], list[Item], list[Item]]:
    lines: list[bytes] = []
    records: list[Item] = []
    outcomes: list[Item] = []
    for number, raw in enumerate(parts, start=first):
        try:
            entry = orjson.loads(raw)
            ((kind, item),) = entry.items()
            for key in _DATETIMES:
                if key in item and item[key] is not None:
                    item[key] = datetime.fromisoformat(item[key])
            if kind not in ("r", "o") or "id" not in item:
                raise ValueError(f"not a journal item: {kind}")
        except (ValueError, TypeError, AttributeError) as exc:
            logger.warning("%s line %d is damaged (%s); skipped", path.name, number, exc)
            continue
        lines.append(raw + b"\n")
        (records if kind == "r" else outcomes).append(item)
    return lines, records, outcomes
