"""Log a dependency's outage once, not once per failed call.

With Redis down, every live event, telemetry state read and shared breaker write failed and
logged its own traceback: about 19 a second (issue 13), which buries the one line that says
what broke. `OutageLog` logs the first failure of an outage with its traceback, counts the
rest quietly (DEBUG), and logs one line when a call succeeds again.
"""

from __future__ import annotations

import logging
import threading
import time


class OutageLog:
    """One per dependency and process: `failed()` from except blocks, `recovered()` after a
    success (cheap when nothing failed, so it can sit on every call)."""

    def __init__(self, what: str, logger: logging.Logger) -> None:
        self.what = what
        self.logger = logger
        self._lock = threading.Lock()
        self._since: float | None = None
        self._failures = 0

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, detail: str = "") -> None:
        """Call inside an `except` block: the first failure logs the exception's traceback."""
        with self._lock:
            self._failures += 1
            first = self._since is None
            if first:
                self._since = time.monotonic()
        suffix = f" ({detail})" if detail else ""
        if first:
            self.logger.warning(
                "%s unavailable%s; logging again when it recovers", self.what, suffix, exc_info=True
            )
        else:
            self.logger.debug("%s still unavailable%s", self.what, suffix)

    def recovered(self) -> None:
        if self._since is None:
            return
        with self._lock:
            if self._since is None:
                return
            lasted, failures = time.monotonic() - self._since, self._failures
            self._since, self._failures = None, 0
        self.logger.warning(
            "%s recovered after %.1f s (%d failed calls)", self.what, lasted, failures
        )
