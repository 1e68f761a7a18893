"""The scorer guard: warm-up, slowness and failures, and the fallback it answers with."""

from __future__ import annotations

import numpy as np

from optimizer.decide.scorers.guard import GuardedScorer, ScorerGuard
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.snapshot import PolicyRef

ACTIVE = PolicyRef(name="ppo", version="1", spec="/nowhere")
FALLBACK = PolicyRef(name="least-loaded", version="builtin", spec="least-loaded")


class _Fixed:
    """A scorer answering fixed scores (or raising), counting its calls."""

    name = "fixed"

    def __init__(self, scores: list[float] | None) -> None:
        self.scores = scores
        self.calls = 0

    def score(self, c: Candidates) -> np.ndarray:
        self.calls += 1
        if self.scores is None:
            raise RuntimeError("broken scorer")
        return np.array(self.scores)


class _Two:
    """Stands in for two candidates: the guard only asks for their number."""

    def __len__(self) -> int:
        return 2


def test_warm_up_and_loading_are_not_held_against_a_scorer() -> None:
    """A scorer whose first calls are slow (TorchScript optimising itself) and which then
    scores well within budget is never bypassed, nor after a cooldown."""
    guard = ScorerGuard(budget_s=0.002)
    for elapsed in (1.5, 0.05, 0.01):
        guard.succeeded("ppo@1", elapsed)
    for _ in range(100):
        guard.succeeded("ppo@1", 0.0003)
    assert guard.usable("ppo@1") and not guard.slow("ppo@1")
    guard.succeeded("ppo@1", 0.5)  # one pause moves the average by a twentieth of itself
    assert guard.slow("ppo@1")  # 25 ms average: over budget
    guard._health["ppo@1"].bypass_until = 0.0  # the cooldown has passed
    for elapsed in (0.02, 0.01, 0.005, 0.0003, 0.0003):
        guard.succeeded("ppo@1", elapsed)
    assert guard.usable("ppo@1") and not guard.slow("ppo@1")


def test_a_failing_scorer_falls_back_counts_why_and_is_bypassed_after_max_errors() -> None:
    reasons: list[str] = []
    guard = ScorerGuard(max_errors=2, on_fallback=reasons.append)
    broken, fallback = _Fixed(None), _Fixed([0.0, 1.0])
    scorers = {ACTIVE.key: broken, FALLBACK.key: fallback}

    def load(ref: PolicyRef) -> _Fixed:
        return scorers[ref.key]

    for _ in range(3):
        wrapped = GuardedScorer(guard, ACTIVE, load, FALLBACK, learned=True)
        scores = wrapped.score(_Two())  # type: ignore[arg-type]
        assert wrapped.used == FALLBACK and wrapped.degraded == "scorer_error"
        assert scores.tolist() == [0.0, 1.0]
    assert broken.calls == 2  # bypassed after two errors in a row, not asked a third time
    assert reasons == ["scorer_error"] * 3


def test_non_finite_scores_count_as_a_failure() -> None:
    guard = ScorerGuard()
    scorers = {ACTIVE.key: _Fixed([np.nan, 1.0]), FALLBACK.key: _Fixed([2.0, 1.0])}
    wrapped = GuardedScorer(guard, ACTIVE, lambda r: scorers[r.key], FALLBACK, learned=False)
    assert wrapped.score(_Two()).tolist() == [2.0, 1.0]  # type: ignore[arg-type]
    assert wrapped.degraded == "scorer_error"
