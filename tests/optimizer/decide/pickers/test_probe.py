"""The exploration probe's arm (`pickers.probe`): which decisions it takes, and which
candidate it answers with (only a target whose estimates meet the request's SLO)."""

from __future__ import annotations

import numpy as np

from optimizer.decide.pickers.probe import ProbePick, in_probe, probe_order, probe_pick
from optimizer.decide.pickers.sticky import within
from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import D_QUEUE, Fleet
from optimizer.decide.state.snapshot import Probe
from tests.optimizer.decide.conftest import constrained


def _probe(targets: set[tuple[str, str]], share: float = 0.05) -> Probe:
    return Probe(probe_id=7, share=share, targets=frozenset(targets), remaining=10, max_requests=10)


def _candidates(fleet: Fleet, request: PlacementRequest, dynamic: np.ndarray) -> Candidates:
    trip = constrained(fleet, request, dynamic)
    return Candidates(fleet, request, trip.index, dynamic)


def test_its_share_is_about_share_and_not_the_canarys_sessions() -> None:
    probe = _probe(set(), share=0.05)
    keys = [f"session-{i}" for i in range(20_000)]
    taken = [k for k in keys if in_probe(probe, k)]
    assert 0.045 <= len(taken) / len(keys) <= 0.055
    # Salted: the probe's sessions are not the first buckets, which a 5% canary holds.
    canary = {k for k in keys if within(k, 0.05)}
    assert len(canary & set(taken)) / len(taken) < 0.15
    assert not any(in_probe(_probe(set(), share=0.0), k) for k in keys[:1000])


def test_it_picks_the_fastest_target_within_the_slo(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    candidates = _candidates(fleet, request_, dynamic)
    names = candidates.names
    targets = {(n, request_.model) for n in names[:2]}
    pick = probe_pick(_probe(targets), candidates)
    assert pick is not None and pick.node in names[:2]
    ttft = candidates.est.ttft_s
    assert ttft[pick.position] == min(ttft[:2])
    assert pick.ttft_ms <= pick.ttft_target_ms == candidates.targets[0] * 1000.0
    # The probe node first, the policy's order after it, cut to k.
    at_two = ProbePick(2, "x", 1.0, 2.0)
    assert probe_order([3, 2, 1, 0], at_two, 3) == [2, 3, 1]
    assert probe_order([3, 1, 0], at_two, 3) == [2, 3, 1]


def test_no_target_among_the_candidates_or_within_the_slo_leaves_the_policys_answer(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    candidates = _candidates(fleet, request_, dynamic)
    node = candidates.names[0]
    assert probe_pick(_probe({("not-a-node", request_.model)}), candidates) is None
    assert probe_pick(_probe({(node, "another-model")}), candidates) is None
    # A queue long enough to put the node's estimated TTFT past the SLO's target.
    busy = dynamic.copy()
    busy[candidates.index[0], D_QUEUE] = 10_000
    loaded = _candidates(fleet, request_, busy)
    assert loaded.est.ttft_s[0] > loaded.targets[0]
    assert probe_pick(_probe({(node, request_.model)}), loaded) is None
