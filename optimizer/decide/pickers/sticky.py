"""Stickiness: a stable bucket per session key, so every decision of one session lands on
the same side of a split (the canary arm). CRC-32 rather than Python's `hash`, which is
salted per process: the buckets must agree across the server's processes and restarts."""

from __future__ import annotations

import zlib

BUCKETS = 10_000  # a share is honoured to 0.01%


def bucket(key: str) -> int:
    """The key's bucket in 0..BUCKETS-1."""
    return zlib.crc32(key.encode()) % BUCKETS


def within(key: str, share: float) -> bool:
    """Whether the key's bucket falls in the first `share` (0..1) of the buckets."""
    return bucket(key) < share * BUCKETS
