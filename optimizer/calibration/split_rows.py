"""The rows of split requests (issue #30), each read off two nodes' timelines.

A split request i, prefilled on node p (profile q, g GPUs) and decoded on node d
(`optimizer/sim/split.py`), spends its TTFT reaching p, waiting there, prefilling, sending its
KV over the link between the two sites (its RTT, and its KV bytes at the link's seconds per
byte σ_l = 1 / bandwidth), waiting at d for admission (it is admitted prefilled: no prefill
time) and coming back from d:

    TTFT_i         = rtt_i + transfer_i + W_p,i · θ + (uncached_i / g) x_q + W_d,i · θ
                     (+ kv_bytes_i σ_l when link l's bandwidth is fitted)
    E2E_i − TTFT_i =                                                         D_d,i · θ

W_p,i spans p's timeline from the prompt's arrival at p to its prefill start, W_d,i d's from
the KV's arrival (the replay's handoff time plus the transfer at the replay's θ) to its first
token, D_d,i d's from its first token to its last: the same integrals as a one-node request's
(design.py), on the node where each part happened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from optimizer.calibration.equations import Layout, NormalEquations
from optimizer.calibration.routes import Routes
from optimizer.observations import Observations
from optimizer.topology import Topology


@dataclass(frozen=True)
class Timeline:
    """One node's replay timeline (design._timeline): event times and cumulative columns
    [R_0..R_K, B_0..B_K, U_0..U_K] per model slot; each slot's profile; each model's slot."""

    times: np.ndarray
    cumulative: np.ndarray
    slots: np.ndarray
    slot_of_model: np.ndarray
    gpus: int

    def columns(self, profiles: int) -> np.ndarray:
        """θ's column of each cumulative column: R→s, B→c, U→x."""
        s = self.slots
        return np.concatenate([profiles + s, 2 * profiles + s, s])


def span(times: np.ndarray, cumulative: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per request, each cumulative column's growth from time a to time b."""
    return np.stack([np.interp(b, times, c) - np.interp(a, times, c) for c in cumulative.T], axis=1)


def _scatter(a: np.ndarray, rows: np.ndarray, columns: np.ndarray, values: np.ndarray) -> None:
    for j in range(len(columns)):
        a[rows, columns[j]] += values[:, j]


def add_split_rows(
    eq: NormalEquations,
    layout: Layout,
    theta: np.ndarray,
    timelines: dict[int, Timeline],
    rids: np.ndarray,
    *,
    node_of: np.ndarray,
    prefill_of: np.ndarray,
    columns: tuple[np.ndarray, ...],  # arrival, first token, last token, handoff, uncached, model
    routes: Routes,
    observations: Observations,
    keep_rule: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None,
) -> None:
    """Add the decode rows of the split requests `rids`, and the TTFT rows `keep_rule(wait,
    own, observed TTFT)` keeps (None: all), weighted as design._add_rows weights. A split
    request's own service is its prefill plus its KV's transfer: both are what the fitted
    values predict, where a queue wait is not (design.QUEUE_SHARE)."""
    if rids.size == 0:
        return
    arrival, t_first, t_end, handed, uncached, model_of = columns
    n_p, m = layout.profiles, rids.size
    x, link_theta = theta[:n_p], theta[3 * n_p :]
    a_ttft = np.zeros((m, layout.size))
    a_dec = np.zeros((m, layout.size))
    own_profile = np.zeros(m, dtype=np.int64)
    decode_profile = np.zeros(m, dtype=np.int64)
    u, waited = np.zeros(m), np.zeros(m)
    own_rounds, own_sequence_rounds = np.zeros(m), np.zeros(m)
    t_node = arrival[rids] + routes.to_fixed[rids] + routes.to_coef[rids] @ link_theta
    t_kv = handed[rids] + routes.kv_fixed[rids] + routes.kv_coef[rids] @ link_theta
    for n in np.unique(prefill_of[rids]):
        line = timelines[int(n)]
        i = np.flatnonzero(prefill_of[rids] == n)
        r = rids[i]
        profile = line.slots[line.slot_of_model[model_of[r]]]
        u[i] = uncached[r] / line.gpus
        t_pre = handed[r] - u[i] * x[profile]
        _scatter(a_ttft, i, line.columns(n_p), span(line.times, line.cumulative, t_node[i], t_pre))
        own_profile[i] = profile
        waited[i] += t_pre - t_node[i]
    for n in np.unique(node_of[rids]):
        line = timelines[int(n)]
        i = np.flatnonzero(node_of[rids] == n)
        r = rids[i]
        k = line.slot_of_model[model_of[r]]
        wait = span(line.times, line.cumulative, t_kv[i], t_first[r])
        decode = span(line.times, line.cumulative, t_first[r], t_end[r])
        _scatter(a_ttft, i, line.columns(n_p), wait)
        _scatter(a_dec, i, line.columns(n_p), decode)
        decode_profile[i] = line.slots[k]
        own_rounds[i] = decode[np.arange(i.size), k]
        own_sequence_rounds[i] = decode[np.arange(i.size), len(line.slots) + k]
        waited[i] += t_first[r] - t_kv[i]
    a_ttft[np.arange(m), own_profile] += u
    a_ttft[:, 3 * n_p :] += routes.coef[rids]
    ttft_observed, e2e = observations.ttft_s[rids], observations.e2e_s[rids]
    own = u * x[own_profile] + (t_kv - handed[rids])
    keep = np.ones(m, dtype=bool) if keep_rule is None else keep_rule(waited, own, ttft_observed)
    np.add.at(eq.queue_free, own_profile, keep)
    np.add.at(eq.queued, own_profile, ~keep)
    np.add.at(eq.rounds, decode_profile, own_rounds)
    np.add.at(eq.sequence_rounds, decode_profile, own_sequence_rounds)
    batch = np.divide(own_sequence_rounds, own_rounds, out=np.zeros(m), where=own_rounds > 0)
    np.add.at(eq.prompt_moments, own_profile, np.stack([np.ones(m), u, u**2], axis=1))
    has = own_rounds > 0
    np.add.at(
        eq.batch_moments,
        decode_profile[has],
        np.stack([np.ones(m), batch, batch**2], axis=1)[has],
    )
    ttft = ttft_observed - routes.transfer[rids] - routes.rtt_fixed[rids]
    w_ttft, w_dec = 1.0 / ttft_observed, 1.0 / e2e
    a = np.concatenate([a_ttft[keep] * w_ttft[keep, None], a_dec * w_dec[:, None]])
    b = np.concatenate([ttft[keep] * w_ttft[keep], (e2e - ttft_observed) * w_dec])
    eq.add(a, b)


def split_samples(
    topology: Topology, observations: Observations, among: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Over the split requests in `among`: per profile, those its prefill node ran on a node of
    another profile than its decode node's (a one-node request counts once, for its node's
    profile: design.profile_of_request), and per link, the KV transfers that crossed it."""
    index = {(p.model, p.accelerator): i for i, p in enumerate(topology.profiles)}
    links = {frozenset((lk.a, lk.b)): i for i, lk in enumerate(topology.links)}
    profiles = np.zeros(len(topology.profiles), dtype=np.int64)
    transfers = np.zeros(len(topology.links), dtype=np.int64)
    for request, node, prefill, counted in zip(
        observations.requests, observations.node, observations.prefill_node, among, strict=True
    ):
        if node is None or prefill is None or not counted:
            continue
        p, d = topology.node_by_name[prefill], topology.node_by_name[node]
        q = index[(request.model, p.accelerator)]
        if q != index[(request.model, d.accelerator)]:
            profiles[q] += 1
        if p.site != d.site:
            transfers[links[frozenset((p.site, d.site))]] += 1
    return profiles, transfers
