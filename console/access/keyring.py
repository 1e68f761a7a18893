"""An in-memory view of the active API keys, so authenticating never waits on the database.

Requests look keys up in a dict. The dict is reloaded in a background thread when older than
`LOCUS_API_KEY_CACHE_SECONDS` (a revoked key stops working within that bound in other
processes, at once in the process that revoked it). A miss looks the one digest up in the
database, at most MISS_LOOKUPS_PER_SECOND times a second, so a brand-new key works at once and
a flood of bad keys cannot hammer the database.
Last-used times are kept in memory and written in bulk on each reload. When the database is
down, keys already loaded keep working; a key the ring cannot look up then (the database
failed, or the ring never loaded and the miss budget is spent) raises KeyRingUnavailable,
which the API answers 503: the credentials are unknown, not invalid (docs/hardening.md).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from console.access.models import ApiKey
from console.dbutil import release_connections

logger = logging.getLogger(__name__)
MISS_LOOKUPS_PER_SECOND = 20


def digest_of(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class KeyRingUnavailable(RuntimeError):
    """The key could not be checked: the database is unreachable."""


@dataclass(frozen=True)
class KeyEntry:
    id: int
    name: str
    role: str
    owner_id: int | None = None  # the person the key acts for (None: a CLI key without one)


class KeyRing:
    """Digest → active key, refreshed from the database off the request path."""

    def __init__(self) -> None:
        self._keys: dict[str, KeyEntry] = {}
        self._loaded_at = 0.0
        self.loaded = False  # a full load has succeeded at least once
        self._miss_window = (0.0, 0)  # (second it started, lookups made in it)
        self._lock = threading.Lock()
        self._refreshing = False
        self._used: dict[int, datetime] = {}
        self._found_during_reload: dict[str, KeyEntry] = {}

    @property
    def ttl(self) -> float:
        return float(getattr(settings, "LOCUS_API_KEY_CACHE_SECONDS", 30.0))

    def lookup(self, digest: str) -> KeyEntry | None:
        now = time.monotonic()
        entry = self._keys.get(digest)
        if entry is None:
            entry = self._lookup_one(digest, now)
        elif now - self._loaded_at > self.ttl:
            self._reload_in_background()
        if entry is not None:
            self._used[entry.id] = datetime.now(UTC)
        return entry

    def cached(self, digest: str) -> KeyEntry | None:
        """A key already in memory, or None; never touches the database (for callers on an
        event loop, which must not block)."""
        entry = self._keys.get(digest)
        if entry is not None:
            if time.monotonic() - self._loaded_at > self.ttl:
                self._reload_in_background()
            self._used[entry.id] = datetime.now(UTC)
        return entry

    def _lookup_one(self, digest: str, now: float) -> KeyEntry | None:
        started, count = self._miss_window
        if now - started >= 1.0:
            started, count = now, 0
        if count >= MISS_LOOKUPS_PER_SECOND:
            if not self.loaded:
                self._reload_in_background()
                raise KeyRingUnavailable("the key ring has not loaded yet")
            return None
        self._miss_window = (started, count + 1)
        try:
            row = (
                ApiKey.objects.filter(digest=digest, revoked_at__isnull=True)
                .values_list("id", "name", "role", "owner_id")
                .first()
            )
        except Exception as exc:
            logger.warning("API key lookup failed", exc_info=True)
            raise KeyRingUnavailable(f"the key could not be looked up: {exc}") from exc
        if row is None:
            return None
        entry = KeyEntry(id=row[0], name=row[1], role=row[2], owner_id=row[3])
        self._keys = {**self._keys, digest: entry}
        self._found_during_reload[digest] = entry
        return entry

    def invalidate(self) -> None:
        self.reload()

    def reset(self) -> None:
        """Forget every key and the miss budget (tests: each starts with an empty ring, and
        a suite that makes many keys in a second must not hit the miss limit)."""
        self._keys = {}
        # As if just refreshed: the TTL, not the machine's uptime, decides when the ring
        # reloads next (monotonic time counts from boot, so 0.0 read as "an hour ago" on a
        # machine up for an hour, and a background reload then raced each test).
        self._loaded_at = time.monotonic()
        self.loaded = False
        self._miss_window = (0.0, 0)
        self._used = {}
        self._found_during_reload = {}

    def _reload_in_background(self) -> None:
        with self._lock:
            if self._refreshing:
                return
            self._refreshing = True

        def run() -> None:
            try:
                self.reload()
            finally:
                release_connections()
                self._refreshing = False

        threading.Thread(target=run, name="locus-keyring", daemon=True).start()

    def reload(self) -> None:
        try:
            self.flush_usage()
            self._found_during_reload = {}
            rows = ApiKey.objects.filter(revoked_at__isnull=True).values_list(
                "digest", "id", "name", "role", "owner_id"
            )
            loaded = {d: KeyEntry(id=i, name=n, role=r, owner_id=o) for d, i, n, r, o in rows}
            # A key looked up while the query ran may be newer than what the query saw.
            self._keys = {**loaded, **self._found_during_reload}
            self._loaded_at = time.monotonic()
            self.loaded = True
        except Exception:  # the database may be down: keep serving the keys we know
            logger.warning(
                "API key reload failed; keeping %d cached keys", len(self._keys), exc_info=True
            )

    def flush_usage(self) -> None:
        used, self._used = self._used, {}
        for key_id, when in used.items():
            ApiKey.objects.filter(pk=key_id).update(last_used_at=when)


keyring = KeyRing()
