"""A failing or slow scorer never reaches the caller: the fallback heuristic decides and the
engine counts it."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import pytest

from console.placement.engine.runtime import runtime
from console.placement.engine.snapshot import PolicyRef, Rollout
from optimizer.policies import Policy
from tests.console.placement.conftest import SMALL_REQUEST

pytestmark = pytest.mark.django_db
REQUEST = SMALL_REQUEST


def _serve(ref: PolicyRef) -> None:
    rt = runtime()
    snap = rt.engine.snapshot
    assert snap is not None
    rt.engine.install(dataclasses.replace(snap, rollout=Rollout(active=ref)))


def _fallbacks(reason: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("locus_fallbacks_total", {"reason": reason}) or 0.0


def test_a_scorer_that_cannot_load_falls_back_and_is_counted(
    example_engine: Any, client_for: Any, tmp_path: Any
) -> None:
    _serve(PolicyRef(name="ppo", version="broken", spec=str(tmp_path / "missing")))
    before = _fallbacks("scorer_error")
    body = client_for("service").post("/api/v1/placements", REQUEST, format="json").json()
    assert body["policy"] == {"name": "least-loaded", "version": "builtin"}
    assert body["degraded"] == "scorer_error"
    assert body["node"] in {"muc-l4-1", "fra-h100-1"}
    assert _fallbacks("scorer_error") == before + 1


class _Slow(Policy):
    name = "slow"

    def scores(self, request: Any, candidates: Any, topology: Any) -> np.ndarray:
        time.sleep(0.01)  # 10 ms, five times the default budget
        return np.arange(len(candidates), dtype=float)


def test_a_slow_scorer_is_bypassed_after_its_average_exceeds_the_budget(
    example_engine: Any, client_for: Any, tmp_path: Any, monkeypatch: Any
) -> None:
    slow = PolicyRef(name="ppo", version="slow", spec=str(tmp_path / "slow-scorer"))
    real = example_engine.engine._load_policy
    monkeypatch.setattr(
        example_engine.engine,
        "_load_policy",
        lambda ref, snap: _Slow() if ref.key == slow.key else real(ref, snap),
    )
    _serve(slow)
    service = client_for("service")
    first = service.post("/api/v1/placements", REQUEST, format="json").json()
    assert first["policy"]["name"] == "ppo" and "degraded" not in first
    before = _fallbacks("scorer_slow")
    then = service.post("/api/v1/placements", REQUEST, format="json").json()
    assert then["policy"]["name"] == "least-loaded" and then["degraded"] == "scorer_slow"
    assert _fallbacks("scorer_slow") == before + 1


def test_a_heuristic_is_never_bypassed_for_being_slow(example_engine: Any, client_for: Any) -> None:
    guard = example_engine.engine.guard
    for _ in range(50):
        guard.succeeded("weighted-score@builtin", 1.0, timed=False)
    body = client_for("service").post("/api/v1/placements", REQUEST, format="json").json()
    assert body["policy"]["name"] == "weighted-score" and "degraded" not in body
