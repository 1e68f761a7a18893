"""Decision ids: random (version 4) UUIDs as 32 hex digits, drawn from a pooled buffer.

`uuid.uuid4()` asks the kernel for 16 random bytes on every call; a decision is a few dozen
microseconds of CPU, and a system call in a virtual machine is a visible share of it. This
draws the same bytes (`os.urandom`, so ids stay unguessable) 4 KiB at a time and sets the
version and variant bits as `uuid.UUID(version=4)` does (RFC 9562 §5.4).
"""

from __future__ import annotations

import os
import threading

_POOL_BYTES = 4096
_VERSION_MASK = ~((0xF000 << 64) | (0xC000 << 48))
_VERSION_4 = (0x4000 << 64) | (0x8000 << 48)


class DecisionIds:
    """Thread-safe source of uuid4 hex strings."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool = b""
        self._at = 0

    def next(self) -> str:
        with self._lock:
            if self._at >= len(self._pool):
                self._pool, self._at = os.urandom(_POOL_BYTES), 0
            at = self._at
            self._at = at + 16
            raw = self._pool[at : at + 16]
        return "%032x" % (int.from_bytes(raw, "big") & _VERSION_MASK | _VERSION_4)


decision_ids = DecisionIds()
