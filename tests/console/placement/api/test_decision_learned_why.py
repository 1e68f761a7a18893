"""GET /api/v1/decisions/{id} for a learned decision: the receipt keeps each candidate's
estimates beside its score and, when the decision was asked to explain or sampled, the
features that moved the pick over the runner-up by integrated gradients; it says when the
pick's own estimates are worse than the runner-up's (optimizer/decide/explain_learned.py)."""

from __future__ import annotations

from typing import Any

import pytest

from console.placement.engine.runtime import Runtime, reset_runtime, runtime
from console.placement.models import DecisionRecord
from optimizer.decide.state.features import FEATURE_NAMES
from tests.console.placement.test_decisions import INTERACTIVE

pytestmark = pytest.mark.django_db
BATCH = {**INTERACTIVE, "source": "us-batch"}  # no residency: more candidates


def _engine(engine_settings: Any, policy: str, every: int) -> Runtime:
    engine_settings.LOCUS_DEFAULT_POLICY = policy
    engine_settings.LOCUS_LEARNED_EXPLAIN_EVERY = every
    reset_runtime()  # the fleet's fixture built one on the default settings
    rt = runtime()
    rt.refresh()
    return rt


@pytest.fixture
def learned(mixed_fleet: Any, engine_settings: Any) -> Runtime:
    """The shipped generalist serving, attributing only decisions asked to explain."""
    return _engine(engine_settings, "generalist", 0)


def _decide(client_for: Any, rt: Runtime, body: dict[str, Any]) -> dict[str, Any]:
    decided = client_for("service").post("/api/v1/placements", body, format="json").json()
    rt.recorder.flush()
    receipt = client_for("viewer").get(f"/api/v1/decisions/{decided['decision_id']}").json()
    assert receipt["policy_name"] == "generalist"
    return dict(receipt["receipt"])


def test_a_learned_decision_asked_to_explain_says_which_features_moved_the_pick(
    learned: Runtime, client_for: Any
) -> None:
    receipt = _decide(client_for, learned, {**BATCH, "explain": True})
    candidates, why = receipt["candidates"], receipt["learned"]
    # Each candidate's estimates stand beside its score.
    for c in candidates:
        assert {"score", "ttft_ms", "e2e_ms", "cost_usd"} <= set(c)
    assert why["method"] == "integrated-gradients"
    assert why["runner_up"] == candidates[1]["node"]
    assert why["margin"] == pytest.approx(candidates[0]["score"] - candidates[1]["score"], abs=1e-4)
    assert why["margin"] == pytest.approx(why["scorer_margin"] + why["cost_term"], abs=1e-4)
    assert len(why["features"]) == 5
    assert {f["feature"] for f in why["features"]} <= set(FEATURE_NAMES)
    sizes = [abs(f["contribution"]) for f in why["features"]]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 0


def test_a_learned_decision_not_asked_keeps_no_attribution(
    learned: Runtime, client_for: Any
) -> None:
    assert "learned" not in _decide(client_for, learned, BATCH)


def test_one_learned_decision_in_every_keeps_its_attribution(
    mixed_fleet: Any, engine_settings: Any, client_for: Any
) -> None:
    rt = _engine(engine_settings, "generalist", 3)
    service = client_for("service")
    for _ in range(6):
        service.post("/api/v1/placements", BATCH, format="json")
    rt.recorder.flush()
    kept = [r.receipt.get("learned") is not None for r in DecisionRecord.objects.order_by("id")]
    assert kept.count(True) == 2


def test_a_heuristic_decision_is_not_attributed(
    mixed_fleet: Any, engine_settings: Any, client_for: Any
) -> None:
    rt = _engine(engine_settings, "weighted-score", 1)
    client_for("service").post("/api/v1/placements", {**BATCH, "explain": True}, format="json")
    rt.recorder.flush()
    assert "learned" not in DecisionRecord.objects.get().receipt


def test_it_says_when_the_picks_estimates_are_worse_than_the_runner_ups(
    learned: Runtime, client_for: Any
) -> None:
    client_for("service").post("/api/v1/placements", BATCH, format="json")
    learned.recorder.flush()
    record = DecisionRecord.objects.get()
    pick, runner = record.receipt["candidates"][:2]
    # The receipt as a Jetson-over-A100 pick would read (issue #28): slower on both.
    pick.update(ttft_ms=900.0, e2e_ms=13_600.0, cost_usd=runner["cost_usd"])
    runner.update(ttft_ms=400.0, e2e_ms=3_400.0)
    DecisionRecord.objects.filter(pk=record.pk).update(receipt=record.receipt)
    said = client_for("viewer").get(f"/api/v1/decisions/{record.pk}").json()["receipt"]
    assert said["against_runner_up"] == {
        "runner_up": runner["node"],
        "worse": ["ttft_ms", "e2e_ms"],
        "text": "The pick's estimated TTFT and end-to-end latency are worse than the "
        f"runner-up's ({runner['node']}): the scorer preferred it on other features.",
    }
    why = client_for("viewer").get(f"/api/v1/nodes/{record.node}/why").json()
    recent = why["recent_decisions"][0]
    assert recent["against_runner_up"] == {
        "runner_up": runner["node"],
        "worse": ["ttft_ms", "e2e_ms"],
        "top_feature": None,
    }


def test_a_pick_better_on_every_estimate_says_nothing(learned: Runtime, client_for: Any) -> None:
    client_for("service").post("/api/v1/placements", BATCH, format="json")
    learned.recorder.flush()
    record = DecisionRecord.objects.get()
    pick, runner = record.receipt["candidates"][:2]
    for key in ("ttft_ms", "e2e_ms", "cost_usd"):
        pick[key] = min(pick[key], runner[key])
    DecisionRecord.objects.filter(pk=record.pk).update(receipt=record.receipt)
    said = client_for("viewer").get(f"/api/v1/decisions/{record.pk}").json()["receipt"]
    assert said["against_runner_up"] is None
