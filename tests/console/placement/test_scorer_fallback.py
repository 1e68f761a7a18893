"""A failing or slow scorer never reaches the caller: the fallback heuristic decides and the
engine counts it."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import pytest

from console.placement.engine.runtime import runtime
from optimizer.decide.scorers.base import Policy
from optimizer.decide.scorers.learned import scorer_digest
from optimizer.decide.state.snapshot import PolicyRef, Rollout
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

    def score(self, candidates: Any) -> np.ndarray:
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
    # The warm-up calls are served and not measured, the next one is measured over budget.
    for _ in range(example_engine.engine.guard.warmup_calls + 1):
        served = service.post("/api/v1/placements", REQUEST, format="json").json()
        assert served["policy"]["name"] == "ppo" and "degraded" not in served
    before = _fallbacks("scorer_slow")
    then = service.post("/api/v1/placements", REQUEST, format="json").json()
    assert then["policy"]["name"] == "least-loaded" and then["degraded"] == "scorer_slow"
    assert _fallbacks("scorer_slow") == before + 1


def test_trained_scorers_load_off_the_request_path_and_survive_inventory_changes(
    example_engine: Any, monkeypatch: Any, tmp_path: Any
) -> None:
    loads: list[str] = []
    fake = PolicyRef(name="ppo", version="1", spec=str(tmp_path / "scorer-dir"))

    def load(spec: str, topology: Any, seed: int = 0) -> Policy:
        loads.append(spec)
        return _Slow()

    monkeypatch.setattr("console.placement.engine.policies.load_policy", load)
    snap = example_engine.engine.snapshot
    with_fake = dataclasses.replace(snap, rollout=Rollout(active=fake))
    example_engine.policies.preload(with_fake)
    assert loads == [fake.spec]  # loaded before serving
    rebuilt = dataclasses.replace(with_fake, topology=snap.topology.model_copy())
    example_engine.policies.preload(rebuilt)
    assert example_engine.policies.get(fake, rebuilt) is not None
    assert loads == [fake.spec]  # a new topology does not reload a trained scorer


def test_a_heuristic_is_never_bypassed_for_being_slow(example_engine: Any, client_for: Any) -> None:
    guard = example_engine.engine.guard
    for _ in range(50):
        guard.succeeded("weighted-score@builtin", 1.0, timed=False)
    body = client_for("service").post("/api/v1/placements", REQUEST, format="json").json()
    assert body["policy"]["name"] == "weighted-score" and "degraded" not in body


def test_a_scorer_file_changed_since_registration_is_not_served(
    example_engine: Any, client_for: Any, tmp_path: Any
) -> None:
    """The engine serves only the scorer.pt that was registered (and so evaluated and
    approved): a changed file falls back, as a scorer that cannot load does."""
    artifact = tmp_path / "ppo"
    artifact.mkdir()
    (artifact / "scorer.pt").write_bytes(b"the registered bytes")
    registered = scorer_digest(artifact)
    (artifact / "scorer.pt").write_bytes(b"swapped afterwards")
    ref = PolicyRef(name="ppo", version="1", spec=str(artifact), sha256=registered)
    snap = example_engine.engine.snapshot
    example_engine.policies.preload(dataclasses.replace(snap, rollout=Rollout(active=ref)))
    assert ref.key in example_engine.policies.unloadable
    _serve(ref)
    body = client_for("service").post("/api/v1/placements", REQUEST, format="json").json()
    assert body["policy"]["name"] == "least-loaded" and body["degraded"] == "scorer_error"
