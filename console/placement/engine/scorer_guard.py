"""Keeps a failing or slow scorer off the decision path.

A scorer that raises is bypassed for that decision; after `max_errors` errors in a row it is
bypassed for `cooldown_s`. A scorer whose moving-average latency exceeds `budget_s` is
bypassed for `cooldown_s` too. Bypassed decisions use the fallback heuristic and are counted
in `locus_fallbacks_total{reason}`; callers never see an error.

Only scoring is timed, never loading (the engine loads policies off the request path), and
the first `warmup_calls` after a load or a cooldown are not measured: TorchScript's profiling
executor optimises a module during its first calls, which take milliseconds where later ones
take microseconds, and an average seeded with them kept a healthy scorer bypassed.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from console.placement.metrics import FALLBACKS

logger = logging.getLogger(__name__)


@dataclass
class _Health:
    errors_in_a_row: int = 0
    timed_calls: int = 0  # since the load or the last cooldown
    ewma_s: float = 0.0
    bypass_until: float = 0.0
    slow: bool = False


@dataclass
class ScorerGuard:
    budget_s: float = 0.005
    max_errors: int = 3
    cooldown_s: float = 30.0
    # Weight of the newest latency in the moving average: ~20 calls of memory, so one
    # garbage-collection pause does not bypass a healthy scorer.
    alpha: float = 0.05
    warmup_calls: int = 3
    _health: dict[str, _Health] = field(default_factory=dict)

    def usable(self, key: str) -> bool:
        health = self._health.get(key)
        return health is None or time.monotonic() >= health.bypass_until

    def slow(self, key: str) -> bool:
        health = self._health.get(key)
        return health is not None and health.slow

    def succeeded(self, key: str, elapsed_s: float, *, timed: bool = True) -> None:
        health = self._health.setdefault(key, _Health())
        health.errors_in_a_row = 0
        if not timed:
            return
        health.timed_calls += 1
        if health.timed_calls <= self.warmup_calls:
            return
        if health.timed_calls == self.warmup_calls + 1:
            health.ewma_s = elapsed_s  # the first measured call seeds the average
        else:
            health.ewma_s += self.alpha * (elapsed_s - health.ewma_s)
        health.slow = health.ewma_s > self.budget_s
        if health.slow:
            logger.warning(
                "scorer %s averages %.2f ms, over the %.2f ms budget; bypassing it for %gs",
                key,
                health.ewma_s * 1e3,
                self.budget_s * 1e3,
                self.cooldown_s,
            )
            health.bypass_until = time.monotonic() + self.cooldown_s
            health.timed_calls = 0  # after the cooldown, measure afresh

    def failed(self, key: str, exc: Exception) -> None:
        health = self._health.setdefault(key, _Health())
        health.errors_in_a_row += 1
        health.slow = False
        logger.warning("scorer %s failed (%s in a row): %s", key, health.errors_in_a_row, exc)
        if health.errors_in_a_row >= self.max_errors:
            health.bypass_until = time.monotonic() + self.cooldown_s

    @staticmethod
    def count_fallback(reason: str) -> None:
        FALLBACKS.labels(reason=reason).inc()
