"""What `"explain": true` adds to a decision: every candidate with its score, rank, estimates
and the state it was judged on (docs/contracts.md §4), best first; the receipt's rows every
decision keeps (docs/dashboard.md); the trust region's note, when a learned scorer's
guard judged the decision (`guard_note`); and what a receipt says of the pick's estimates
against the runner-up's. Why a learned scorer preferred its pick: `explain_learned`."""

from __future__ import annotations

from typing import Any

import numpy as np

from optimizer.decide.pickers.top_k import top_k
from optimizer.decide.scorers.trust_region import VERDICTS, TrustRegionPolicy
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import D_KV_USED, D_QUEUE, D_RUNNING, S_KV_CAPACITY
from optimizer.decide.state.live import LiveState
from optimizer.decide.state.snapshot import Snapshot
from optimizer.topology import Topology


def explain(
    candidates: Candidates,
    scores: np.ndarray,
    snap: Snapshot,
    live: LiveState | None,
    now: float,
) -> list[dict[str, Any]]:
    """Every candidate best first."""
    order = top_k(scores, len(scores))
    est = candidates.est
    topology = snap.topology
    d, capacity = candidates.dynamic, candidates.static[:, S_KV_CAPACITY]
    blocks = candidates.prefix_blocks
    ages = live.age_s(candidates.index, now) if live is not None else None
    rows: list[dict[str, Any]] = []
    for rank, i in enumerate(order, start=1):
        name = candidates.names[i]
        node = topology.node_by_name[name]
        age = None if ages is None or np.isnan(ages[i]) else round(float(ages[i]), 3)
        rows.append(
            {
                "node": name,
                "site": node.site,
                "tier": topology.site_by_name[node.site].tier,
                "score": float(scores[i]),
                "rank": rank,
                "estimated_ttft_ms": round(float(est.ttft_s[i]) * 1000, 3),
                "estimated_e2e_ms": round(float(est.e2e_s[i]) * 1000, 3),
                "estimated_cost_usd": float(est.cost_usd[i]),
                "queue_depth": int(d[i, D_QUEUE]),
                "running": int(d[i, D_RUNNING]),
                "kv_used_fraction": float(d[i, D_KV_USED] / capacity[i]) if capacity[i] else 0.0,
                "prefix_blocks": int(blocks[i]),
                "telemetry_age_s": age,
            }
        )
    return rows


def receipt_candidates(
    candidates: Candidates, scores: np.ndarray, order: list[int], topology: Topology
) -> list[dict[str, Any]]:
    """The receipt's rows (docs/dashboard.md) for the candidates at `order`, best first: score,
    estimated TTFT, E2E, prefill and cost, KV use and queue (the prefill estimate lets the
    console attribute the request's cost once its outcome is known, `optimizer.attribution`).
    Every decision builds them, so they come
    from the candidate columns in a few vector operations; `explain`'s full rows cost about
    four times as much (tests/bench/bench_receipts.py)."""
    if not order:
        return []
    at = np.asarray(order, dtype=np.int64)
    est = candidates.est
    state = candidates.dynamic[at]
    capacity = candidates.static[at, S_KV_CAPACITY]
    kv = np.divide(
        state[:, D_KV_USED], capacity, out=np.zeros(len(at), dtype=np.float64), where=capacity > 0
    )
    # One rounding and one conversion for both latency columns: numpy's fixed cost per call
    # is most of a receipt's price at a few candidates.
    ttft, e2e, prefill = (
        (np.stack((est.ttft_s[at], est.e2e_s[at], est.prefill_s[at])) * 1000).round(3).tolist()
    )
    cost = est.cost_usd[at].tolist()
    score = np.asarray(scores, dtype=np.float64)[at].tolist()
    kv_used = kv.round(4).tolist()
    queue = state[:, D_QUEUE].astype(np.int64).tolist()
    fleet_names, node_by_name = candidates.fleet.names, topology.node_by_name
    rows = []
    for j, i in enumerate(candidates.index[at].tolist()):
        name = fleet_names[i]
        rows.append(
            {
                "node": name,
                "site": node_by_name[name].site,
                "score": score[j],
                "ttft_ms": ttft[j],
                "e2e_ms": e2e[j],
                "prefill_ms": prefill[j],
                "cost_usd": cost[j],
                "kv_used": kv_used[j],
                "queue": queue[j],
            }
        )
    return rows


def guard_note(policy: object) -> dict[str, Any] | None:
    """What the trust region (`optimizer.decide.scorers.trust_region`) did on the decision
    `policy` scored last, and since it was loaded: `{"verdict", "anchor", "counts":
    {verdict: decisions}}`, so an SRE sees when the guard overrode the learned scorer
    (`outside`) or bypassed it (`out_of_distribution`). None for a policy without one."""
    if not isinstance(policy, TrustRegionPolicy) or not policy.verdict:
        return None
    return {
        "verdict": policy.verdict,
        "anchor": policy.anchor.name,
        "counts": {v: policy.counts[v] for v in VERDICTS},
    }


# The receipt's estimates compared with the runner-up's, lower is better for each.
ESTIMATES = (("ttft_ms", "TTFT"), ("e2e_ms", "end-to-end latency"), ("cost_usd", "cost"))


def estimates_against_runner_up(candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Which of the pick's receipt estimates are worse than the runner-up's (the first two
    receipt rows; read when a receipt is, issue #28), as `{"runner_up", "worse": [key...],
    "text"}`; None without a runner-up or when no estimate is worse. A learned scorer
    weighs what the estimates do not hold (load, prefix reuse, tier), so such a pick is no
    error, but the receipt must say so."""
    if len(candidates) < 2:
        return None
    pick, runner = candidates[0], candidates[1]
    worse = []
    for key, _ in ESTIMATES:
        mine, theirs = pick.get(key), runner.get(key)
        if isinstance(mine, int | float) and isinstance(theirs, int | float) and mine > theirs:
            worse.append(key)
    if not worse:
        return None
    words = [label for key, label in ESTIMATES if key in worse]
    return {
        "runner_up": runner.get("node"),
        "worse": worse,
        "text": (
            f"The pick's estimated {_join(words)} {'is' if len(words) == 1 else 'are'} worse "
            f"than the runner-up's ({runner.get('node')}): the scorer preferred it on other "
            "features."
        ),
    }


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
