"""The scorer guard: keeps a failing or slow scorer off the decision path.

A scorer that raises is bypassed for that decision; after `max_errors` errors in a row it is
bypassed for `cooldown_s`. A scorer whose moving-average latency exceeds `budget_s` is
bypassed for `cooldown_s` too. Bypassed decisions use the fallback heuristic and are counted
through `on_fallback` (the console counts `locus_fallbacks_total{reason}`: a callback, so this
package stays free of Django and Prometheus); callers never see an error.

Only scoring is timed, never loading (the engine loads policies off the request path), and
the first `warmup_calls` after a load or a cooldown are not measured: TorchScript's profiling
executor optimises a module during its first calls, which take milliseconds where later ones
take microseconds, and an average seeded with them kept a healthy scorer bypassed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from optimizer.decide.framework import Scorer
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.snapshot import PolicyRef

logger = logging.getLogger(__name__)


@dataclass
class _Health:
    errors_in_a_row: int = 0
    timed_calls: int = 0  # since the load or the last cooldown
    ewma_s: float = 0.0
    bypass_until: float = 0.0
    slow: bool = False


def _uncounted(reason: str) -> None:
    """The default fallback counter: none (the simulator and the benches never fall back)."""


@dataclass
class ScorerGuard:
    budget_s: float = 0.005
    max_errors: int = 3
    cooldown_s: float = 30.0
    # Weight of the newest latency in the moving average: ~20 calls of memory, so one
    # garbage-collection pause does not bypass a healthy scorer.
    alpha: float = 0.05
    warmup_calls: int = 3
    on_fallback: Callable[[str], None] = _uncounted
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

    def count_fallback(self, reason: str) -> None:
        self.on_fallback(reason)

    def score(
        self,
        ref: PolicyRef,
        candidates: Candidates,
        load: Callable[[PolicyRef], Scorer],
        fallback: PolicyRef,
        learned: bool,
    ) -> tuple[np.ndarray, PolicyRef, str]:
        """`ref`'s scores, or the `fallback` heuristic's when `ref`'s scorer fails, is slow
        or cannot be loaded: (scores, the policy used, "" or why it fell back). `learned`:
        `ref` is a trained scorer, the only kind bypassed for slowness (a heuristic is what
        the engine would fall back to anyway, and on a busy machine every policy slows)."""
        if ref.key != fallback.key and self.usable(ref.key):
            try:
                scorer = load(ref)
                started = time.perf_counter()  # scoring is timed, loading is not
                scores = np.asarray(scorer.score(candidates), dtype=np.float64)
                if scores.shape != (len(candidates),) or not np.all(np.isfinite(scores)):
                    raise ValueError(f"scorer returned shape {scores.shape} or non-finite values")
            except Exception as exc:
                self.failed(ref.key, exc)
            else:
                self.succeeded(ref.key, time.perf_counter() - started, timed=learned)
                return scores, ref, ""
            reason = "scorer_error"
        elif ref.key == fallback.key:
            reason = ""
        else:
            reason = "scorer_slow" if self.slow(ref.key) else "scorer_error"
        if reason:
            self.count_fallback(reason)
        scores = np.asarray(load(fallback).score(candidates), dtype=np.float64)
        return scores, fallback, reason


class GuardedScorer:
    """A policy's scorer behind a guard, as a pipeline scorer: `score` answers the policy's
    scores or the fallback's, and leaves on the object which policy it used and why it fell
    back ("" when it did not). One per decision (it carries that decision's answer)."""

    __slots__ = ("guard", "ref", "load", "fallback", "learned", "used", "degraded")
    name = "guarded"

    def __init__(
        self,
        guard: ScorerGuard,
        ref: PolicyRef,
        load: Callable[[PolicyRef], Scorer],
        fallback: PolicyRef,
        learned: bool,
    ) -> None:
        self.guard = guard
        self.ref = ref
        self.load = load
        self.fallback = fallback
        self.learned = learned
        self.used = ref
        self.degraded = ""

    def score(self, c: Candidates) -> np.ndarray:
        scores, self.used, self.degraded = self.guard.score(
            self.ref, c, self.load, self.fallback, self.learned
        )
        return scores
