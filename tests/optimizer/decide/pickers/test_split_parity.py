"""The split stage's one pass over the pool gives the pairs and numbers, to the last bit, of
the split stage as first written (issue #30): each side's own `Candidates` and `Estimates`,
which this module keeps as the reference."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from optimizer.bench_decide import HASHES, _fleet_of, _state
from optimizer.decide.framework import Pair, Split, Trip
from optimizer.decide.pickers.split import ThresholdSplitter
from optimizer.decide.pickers.split_pool import (
    SMALL_POOL,
    SmallSplitPool,
    SplitPool,
    pool_rows,
)
from optimizer.decide.pickers.top_k import top_k
from optimizer.decide.pipeline import Pipeline
from optimizer.decide.registry import get_filter, get_policy
from optimizer.decide.request import slo_targets_s
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.estimates import TYPICAL_OUTPUT_TOKENS
from optimizer.decide.state.fleet import (
    D_QUEUE,
    D_QUEUED_TOKENS,
    D_RUNNING,
    S_MAX_BATCH,
    S_STEP_MS,
    S_STEP_MS_PER_SEQ,
    Fleet,
)
from optimizer.decide.state.prefix import PrefixIndex
from optimizer.topology_files import load_topology
from tests.optimizer.fleets import REPO

PD_TWO_REGIONS = REPO / "optimizer" / "topologies" / "pd-two-regions.yaml"


def decode_wait_s(c: Candidates) -> np.ndarray:
    """Seconds before each candidate could admit one more sequence as a decode node: half a
    decode step when it is busy, plus the estimates' overflow wait when its batch is full."""
    s, d = c.static, c.dynamic
    max_batch, running = s[:, S_MAX_BATCH], d[:, D_RUNNING]
    step = (s[:, S_STEP_MS] + s[:, S_STEP_MS_PER_SEQ] * np.minimum(running + 1, max_batch)) / 1000.0
    overflow = np.maximum(d[:, D_QUEUE] + running + 1 - max_batch, 0.0)
    return np.where(running > 0, 0.5 * step, 0.0) + overflow / max_batch * (
        TYPICAL_OUTPUT_TOKENS * step
    )


class ReferenceSplitter(ThresholdSplitter):
    """`ThresholdSplitter.pairs` as first written: Candidates and full Estimates per side."""

    def pairs(
        self, trip: Trip, mixed: Candidates, order: list[int], k: int, prefix: PrefixIndex | None
    ) -> list[Pair] | None:
        request, fleet, pool = trip.request, trip.fleet, trip.pool
        if request.prompt_tokens <= self.threshold_tokens or k < 1:
            return None
        p_index = pool[fleet.can_prefill[pool]]
        d_index = pool[fleet.can_decode[pool]]
        if not len(p_index) or not len(d_index):
            return None
        aware = self.bandwidth_aware
        ep = Candidates(fleet, request, p_index, trip.dynamic, prefix).est
        done = (ep.rtt_s / 2 + ep.transfer_s if aware else ep.rtt_s / 2) + ep.wait_s + ep.prefill_s
        p_order = top_k(-done, min(k, len(p_index)))
        best_p = p_order[0]
        if request.prompt_tokens * (1.0 - ep.cached_fraction[best_p]) <= self.threshold_tokens:
            return None
        dec = Candidates(fleet, request, d_index, trip.dynamic)
        kv_bytes = request.prompt_tokens * fleet.kv_per_token[fleet.model_index[request.model]]
        d_sites = fleet.node_site[d_index]
        s, d = dec.static, dec.dynamic
        d_wait = decode_wait_s(dec)
        d_back = dec.routes[:, 0] / 2
        site = fleet.node_site[p_index[best_p]]
        transfer = fleet.kv_rtt_s[site, d_sites]
        if aware:
            transfer = transfer + kv_bytes * fleet.kv_s_per_byte[site, d_sites]
        ttft = np.maximum(done[best_p] + transfer, d_wait) + d_back
        load = (d[:, D_QUEUE] + d[:, D_RUNNING]) / s[:, S_MAX_BATCH]
        score = -(ttft / slo_targets_s(request, fleet.topology)[0] + self.LOAD_WEIGHT * load)
        reachable = ~np.isnan(score) & (d_index != p_index[best_p])
        if not reachable.any():
            return None
        score = np.where(reachable, score, -np.inf)
        d_order = [j for j in top_k(score, min(k, len(d_index))) if reachable[j]]
        mixed_ttft: float | None = None
        if order:
            em, pick = mixed.estimated, order[0]
            if em is None:
                keep = np.zeros(len(mixed), dtype=bool)
                keep[pick] = True
                em, pick = mixed.take(keep).est, 0
            mixed_ttft = float(em.ttft_s[pick] - (0.0 if aware else em.transfer_s[pick]))
            if ttft[d_order[0]] >= mixed_ttft:
                return None
        answers: list[Pair] = []
        for j, dj in enumerate(d_order):
            p = p_order[j] if j < len(p_order) else best_p
            pair_ttft, pair_transfer = float(ttft[dj]), float(transfer[dj])
            if p != best_p:
                a, b = fleet.node_site[p_index[p]], d_sites[dj]
                x = float(fleet.kv_rtt_s[a, b])
                if aware:
                    x += kv_bytes * float(fleet.kv_s_per_byte[a, b])
                if x == x and p_index[p] != d_index[dj]:
                    pair_transfer = x
                    pair_ttft = max(float(done[p]) + x, float(d_wait[dj])) + float(d_back[dj])
                else:
                    p = best_p
            split = Split(kv_bytes, pair_transfer, pair_ttft, mixed_ttft)
            answers.append(Pair(int(d_index[dj]), int(p_index[p]), split))
        answers.extend(Pair(int(mixed.index[j])) for j in order[: k - len(answers)])
        return answers


def _same_columns(trip: Trip, mixed: Candidates, prefix: PrefixIndex | None) -> None:
    """Both pool passes' columns are the estimates' on the whole pool, bit for bit."""
    rows = pool_rows(trip)
    whole = Candidates(trip.fleet, trip.request, trip.pool, trip.dynamic, prefix)
    est = whole.est
    d_at = rows.decode_at
    s, d = whole.static, whole.dynamic
    load = ((d[:, D_QUEUE] + d[:, D_RUNNING]) / s[:, S_MAX_BATCH])[d_at]
    transfer = np.linspace(0.0, 0.5, len(d_at))
    wait = decode_wait_s(whole)[d_at]
    ttft = np.maximum(0.25 + transfer, wait) + (whole.routes[:, 0] / 2)[d_at]
    for kind in (SplitPool, SmallSplitPool):
        pool = kind(trip, rows, mixed, prefix)
        decoded = pool.decode(rows, transfer, 0.25, 3.0, 0.2)
        for got, want in (
            (pool.rtt_s, est.rtt_s),
            (pool.transfer_s, est.transfer_s),
            (pool.wait_s, est.wait_s),
            (pool.prefill_s, est.prefill_s),
            (decoded[0], wait),
            (decoded[1], ttft),
            (decoded[2], ttft / 3.0 + 0.2 * load),
            ([pool.ttft_s(q) for q in range(len(trip.pool))], est.ttft_s),
        ):
            assert np.asarray(got, dtype=np.float64).tobytes() == want.tobytes()
    assert rows.back_s.tobytes() == (whole.routes[:, 0] / 2).tobytes()
    assert rows.decode_back_s.tobytes() == (whole.routes[:, 0] / 2)[d_at].tobytes()


def _bits(pairs: list[Pair] | None) -> list[tuple[object, ...]] | None:
    """The pairs with every float as its exact bits (`float.hex`)."""
    if pairs is None:
        return None
    out: list[tuple[object, ...]] = []
    for pair in pairs:
        s = pair.split
        mixed = None if s is None or s.ttft_mixed_s is None else s.ttft_mixed_s.hex()
        split = None if s is None else (s.kv_bytes, s.transfer_s.hex(), s.ttft_split_s.hex(), mixed)
        out.append((pair.decode, pair.prefill, split))
    return out


# Pools on either side of `SMALL_POOL`: Python floats, then numpy columns.
@pytest.mark.parametrize("nodes", [12, SMALL_POOL, SMALL_POOL + 1, 300])
@pytest.mark.parametrize("policy", ["weighted-score", "least-loaded"])
def test_the_pool_pass_splits_as_each_sides_estimates_did(nodes: int, policy: str) -> None:
    topology, probe = _fleet_of(load_topology(PD_TWO_REGIONS), nodes)
    fleet = Fleet(topology)
    model = fleet.model_index[probe.model]
    scorer = get_policy(policy, topology, 0)
    rng = np.random.default_rng(nodes)
    decided = split = narrowed = 0
    for trial in range(24):
        dynamic, prefix = _state(fleet, model, rng)
        index: PrefixIndex | None = prefix
        if trial % 3 == 1:  # nodes that report their queued tokens, beside nodes that do not
            reported = rng.random(fleet.size) < 0.5
            queued = rng.integers(1, 50_000, fleet.size)
            dynamic[:, D_QUEUED_TOKENS] = np.where(reported, queued, 0)
        if trial % 4 == 2:  # an idle fleet: the estimates' shortcuts
            dynamic[:, D_QUEUE] = dynamic[:, D_RUNNING] = 0
        if trial % 5 == 3:  # caches without an inverted index, as the simulator keeps them
            index = PrefixIndex(fleet.size, indexed=False)
            for i, cache in enumerate(prefix.caches):
                if cache is not None:
                    held = HASHES[: cache.match(model, HASHES)]
                    index.cache_of(i).insert(model, held, 1, 1 << 40)
        if trial % 7 == 4:
            index = None
        # The longest prompt leaves some nodes without KV room: the pool is then gathered.
        prompt = int(rng.choice([1500, 4000, 8000, 20_000, 150_000]))
        hashes = HASHES if trial % 6 else ()
        req = dataclasses.replace(probe, prompt_tokens=prompt, prefix_hashes=hashes)
        _, trip = Pipeline([get_filter("constraints")]).candidates(fleet, req, dynamic, index)
        _same_columns(trip, Candidates(fleet, req, trip.index, dynamic, index), index)
        for aware in (True, False):
            for k in (1, 4, 7):
                threshold = int(rng.choice([0, 1024, 3000]))
                got, want = (
                    Pipeline([get_filter("constraints")], splitter=splitter).decide(
                        fleet, req, dynamic, index, scorer, k
                    )
                    for splitter in (
                        ThresholdSplitter(threshold, bandwidth_aware=aware),
                        ReferenceSplitter(threshold, bandwidth_aware=aware),
                    )
                )
                assert _bits(got.pairs) == _bits(want.pairs)
                decided += 1
                split += want.split
                narrowed += got.trip.split is not None and got.trip.pool is not got.trip.split.index
    # The comparison covers splits, not only refusals, and both ways to the pool's rows.
    assert split > decided // 4 and 0 < narrowed < decided
