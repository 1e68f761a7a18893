"""The trust region (issue #26, "do no harm"): a scorer made bad on purpose cannot push
attainment below the guard's floor, the guard changes nothing while the learned pick is in the
region, and out of the training distribution the anchor decides."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from optimizer.cli import main
from optimizer.decide.explain import guard_note
from optimizer.decide.registry import GENERALIST_DIR, get_policy, load_policy
from optimizer.decide.request import PlacementRequest
from optimizer.decide.scorers.base import Policy
from optimizer.decide.scorers.learned import (
    POLICY_FILE,
    SCORER_FILE,
    TrainedPolicy,
    scorer_digest,
)
from optimizer.decide.scorers.trust_region import Region, TrustRegionPolicy
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import D_QUEUE, Fleet
from optimizer.errors import InputFileError
from tests.optimizer.decide.conftest import constrained
from tests.optimizer.fleets import AZURE, FLEET_DEMO

# Attainment the guarded bad scorer may lose to its anchor on the run below: 2 points, six
# requests of 300, at this size the run-to-run noise of one policy against another.
FLOOR_PTS = 2.0


class _Negated(torch.nn.Module):
    """The generalist's scorer with every score negated: its worst candidate ranks first."""

    def __init__(self, inner: torch.jit.ScriptModule) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, rows: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return -self.inner(rows, mask)


def _policy_dir(root: Path, name: str, trust_region: object | None = None) -> Path:
    """A copy of the generalist named `name`, negated, with policy.json's `trust_region`
    (left out when None)."""
    out = root / name
    out.mkdir()
    inner = torch.jit.load(str(GENERALIST_DIR / SCORER_FILE))
    torch.jit.script(_Negated(inner)).save(str(out / SCORER_FILE))
    meta = json.loads((GENERALIST_DIR / POLICY_FILE).read_text())
    meta["name"] = name
    if trust_region is not None:
        meta["trust_region"] = trust_region
    (out / POLICY_FILE).write_text(json.dumps(meta))
    return out


def test_a_negated_scorer_cannot_push_attainment_below_the_guards_floor(tmp_path: Path) -> None:
    """Through `evaluate`, 300 requests on the demo fleet at its capacity, node state seen
    through 10 s telemetry: the negated generalist alone loses many points to weighted-score
    (so the run can tell), and inside the trust region it stays within the floor."""
    guarded = _policy_dir(tmp_path, "negated", trust_region=True)
    bare = _policy_dir(tmp_path, "negated-bare", trust_region=False)
    report = tmp_path / "eval.json"
    argv = ["evaluate", "--topology", str(FLEET_DEMO), "--trace", str(AZURE)]
    argv += ["--utilisation", "1", "--limit", "300", "--telemetry-interval", "10"]
    argv += ["--policies", f"weighted-score,{guarded},{bare}", "--report", str(report)]
    assert main(argv) == 0
    attained = {
        name: 100 * row["slo_attainment"]
        for name, row in json.loads(report.read_text())["policies"].items()
    }
    floor = attained["weighted-score"] - FLOOR_PTS
    assert attained[str(bare)] < floor - 5
    assert attained[str(guarded)] >= floor


class _Scores(Policy):
    """Answers fixed scores (a learned scorer or an anchor of known preferences)."""

    def __init__(self, scores: list[float], name: str = "fixed") -> None:
        self.fixed = np.array(scores, dtype=np.float64)
        self.name = name

    def score(self, c: Candidates) -> np.ndarray:
        return self.fixed[: len(c)]


def _candidates(fleet: Fleet, request: PlacementRequest, dynamic: np.ndarray) -> Candidates:
    trip = constrained(fleet, request, dynamic)
    return Candidates(fleet, request, trip.index, dynamic, None, split=trip.split)


def test_the_guard_changes_nothing_while_the_learned_pick_is_in_the_region(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    c = _candidates(fleet, request_, dynamic)
    n = len(c)
    anchor = get_policy("weighted-score", fleet.topology)
    best = int(np.argmax(anchor.score(c)))
    # The learned scorer prefers the anchor's own pick, and ranks the rest its own way.
    learned = np.arange(n, dtype=np.float64)[::-1].copy()
    learned[best] = n + 1.0
    guard = TrustRegionPolicy(_Scores(list(learned)), anchor, Region(), None, None)
    scores = guard.score(c)
    np.testing.assert_array_equal(scores, learned)
    assert int(np.argmax(scores)) == best
    assert guard.verdict == "inside" and guard.counts["inside"] == 1
    # A region wide enough for every candidate leaves every score as the learned scorer's.
    wide = TrustRegionPolicy(_Scores(list(-learned)), anchor, Region(1e9, 1e9), None, None)
    np.testing.assert_array_equal(wide.score(c), -learned)
    assert wide.verdict == "inside"


def test_a_learned_pick_outside_the_region_leaves_the_decision_to_the_anchor(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    c = _candidates(fleet, request_, dynamic)
    # The anchor rates the first candidate best, the second a full target below; the learned
    # scorer prefers the second.
    anchor = _Scores([0.0, -1.0], "anchor")
    guard = TrustRegionPolicy(_Scores([0.0, 1.0]), anchor, Region(margin=0.1), None, None)
    np.testing.assert_array_equal(guard.score(c), [0.0, -1.0])
    assert guard_note(guard) == {
        "verdict": "outside",
        "anchor": "anchor",
        "counts": {"inside": 0, "outside": 1, "out_of_distribution": 0},
    }
    # Within the margin, the learned pick stands.
    near = TrustRegionPolicy(_Scores([0.0, 1.0]), anchor, Region(margin=1.0), None, None)
    np.testing.assert_array_equal(near.score(c), [0.0, 1.0])
    assert near.verdict == "inside"


def test_out_of_the_training_distribution_the_anchor_decides(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    """The shipped generalist in its trust region (`generalist-guarded`): on an idle fleet it
    scores; with one candidate's queue far beyond anything training saw, the anchor's scores
    are answered."""
    policy = load_policy("generalist-guarded", fleet.topology)
    assert isinstance(policy, TrustRegionPolicy)
    assert policy.anchor.name == "weighted-score"
    policy.score(_candidates(fleet, request_, dynamic))
    assert policy.verdict in ("inside", "outside")
    flooded = dynamic.copy()
    flooded[int(_candidates(fleet, request_, dynamic).index[0]), D_QUEUE] = 1e6
    c = _candidates(fleet, request_, flooded)
    assert policy.out_of_distribution(c)
    np.testing.assert_array_equal(policy.score(c), policy.anchor.score(c))
    assert policy.verdict == "out_of_distribution"
    assert policy.counts["out_of_distribution"] == 1


def test_a_policy_may_opt_in_or_set_its_region_and_bad_settings_are_refused(
    tmp_path: Path, fleet: Fleet
) -> None:
    def with_region(name: str, region: object) -> Path:
        out = tmp_path / name
        shutil.copytree(GENERALIST_DIR, out)
        meta = json.loads((out / POLICY_FILE).read_text())
        if region is not None:
            meta["trust_region"] = region
        (out / POLICY_FILE).write_text(json.dumps(meta))
        return out

    topology = fleet.topology
    # The region changes the decisions, so a registered version's digest covers it.
    assert scorer_digest(with_region("same", None)) == scorer_digest(GENERALIST_DIR)
    assert scorer_digest(with_region("wider", {"margin": 0.2})) != scorer_digest(GENERALIST_DIR)
    # No region unless policy.json asks for one (the shipped generalist does not).
    for name, region in [("unset", None), ("bare", False)]:
        bare = load_policy(str(with_region(name, region)), topology)
        assert isinstance(bare, TrainedPolicy)
        assert guard_note(bare) is None
    assert isinstance(load_policy("generalist", topology), TrainedPolicy)
    defaults = load_policy(str(with_region("defaults", True)), topology)
    assert isinstance(defaults, TrustRegionPolicy)
    assert defaults.anchor.name == "weighted-score"
    tuned = load_policy(
        str(with_region("tuned", {"anchor": "latency-first", "margin": 0.3})), topology
    )
    assert isinstance(tuned, TrustRegionPolicy)
    assert tuned.anchor.name == "latency-first" and tuned.region.margin == 0.3
    for name, region, needle in [
        ("anchor", {"anchor": "slo-aware"}, "anchor must be a built-in heuristic"),
        ("margin", {"margin": -1}, "margin must be a number >= 0"),
        ("typo", {"margn": 0.2}, "unknown trust_region setting(s): margn"),
        ("shape", [0.1], "must be true, false or an object"),
    ]:
        with pytest.raises(InputFileError, match=needle.replace("(", r"\(").replace(")", r"\)")):
            load_policy(str(with_region(name, region)), topology)
