"""The linear system of one calibration step, read off a forced replay's timeline.

Given a replay at parameters θ, every observed request gives two equations that are linear in
θ (docs/twin.md, "Method"). θ holds, per profile p, x_p = 1 / prefill_tokens_per_s (seconds
per token on one GPU), the decode step s_p and the per-sequence step c_p (seconds), and per
fitted link l its RTT r_l. For request i on node n (g GPUs, its profile q):

    TTFT_i       = rtt_i + transfer_i + W_i · θ + (uncached_i / g) x_q
    E2E_i − TTFT_i =                     D_i · θ

W_i collects what node n did while i waited (from reaching the node to its prefill start),
D_i what it did while i decoded (from its first token to its last); both come from the
replay's timeline of n, which is piecewise constant between events. While n prefills a
request of profile k it gets through 1/x_k (uncached tokens / g) a second; while it decodes,
a round takes ρ = Σ_k active (s_k + c_k b_k) (optimizer/sim/node.py: models take turns), so
a span of length Δt holds Δt/ρ rounds and Σ b_k Δt/ρ sequence-rounds of model k. Summing
those rates over W's and D's spans gives coefficients whose dot product with θ is exactly
the time spent, so the true θ reproduces itself: it is a fixed point of "replay, then solve".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optimizer.decide.state.estimates import PROMPT_BYTES_PER_TOKEN
from optimizer.observations import Observations
from optimizer.sim.engine import SimResult
from optimizer.sim.requests import SERVED
from optimizer.topology import Topology


@dataclass(frozen=True)
class Layout:
    """Where each parameter sits in θ: x, s, c per profile (topology order), then links."""

    profiles: int
    links: tuple[int, ...]  # topology link indices that are fitted, in θ order after 3P

    @property
    def size(self) -> int:
        return 3 * self.profiles + len(self.links)


@dataclass
class NormalEquations:
    """AᵀA, Aᵀb and bᵀb of the weighted rows (each row divided by its observed latency, so
    the fit minimises squared relative errors), and the row count. Per profile, the
    sequence-rounds and rounds its requests decoded in (their ratio is the mean batch size
    the decode terms were measured at)."""

    ata: np.ndarray
    atb: np.ndarray
    btb: float
    rows: int
    sequence_rounds: np.ndarray
    rounds: np.ndarray

    def mean_batch(self) -> np.ndarray:
        """Per profile the mean decode batch its requests saw (0: none decoded)."""
        return np.divide(
            self.sequence_rounds,
            self.rounds,
            out=np.zeros_like(self.rounds),
            where=self.rounds > 0,
        )


class Routes:
    """Per request: its link's place in θ (-1: not fitted), the RTT it is given when that link
    is not fitted (0 when it is), and its prompt's transfer time (never fitted)."""

    def __init__(self, topology: Topology, observations: Observations, layout: Layout) -> None:
        fitted = {
            frozenset((topology.links[i].a, topology.links[i].b)): j
            for j, i in enumerate(layout.links)
        }
        n = len(observations)
        self.link = np.full(n, -1, dtype=np.int64)
        self.transfer = np.zeros(n)
        self.rtt_fixed = np.zeros(n)
        for rid, (request, node) in enumerate(
            zip(observations.requests, observations.node, strict=True)
        ):
            if node is None:
                continue
            site = topology.node_by_name[node].site
            route = topology.routes[(request.source_site, site)]
            self.transfer[rid] = PROMPT_BYTES_PER_TOKEN * request.prompt_tokens * route.s_per_byte
            if site != request.source_site:
                self.link[rid] = fitted.get(frozenset((request.source_site, site)), -1)
            if self.link[rid] < 0:
                self.rtt_fixed[rid] = route.rtt_s


def profile_of_request(topology: Topology, observations: Observations) -> np.ndarray:
    """Per request the topology index of its observed node's profile (-1: rejected)."""
    index = {(p.model, p.accelerator): i for i, p in enumerate(topology.profiles)}
    return np.array(
        [
            -1 if node is None else index[(r.model, topology.node_by_name[node].accelerator)]
            for r, node in zip(observations.requests, observations.node, strict=True)
        ],
        dtype=np.int64,
    )


def accumulate(
    topology: Topology,
    result: SimResult,
    observations: Observations,
    theta: np.ndarray,
    layout: Layout,
    routes: Routes,
) -> NormalEquations:
    """The normal equations of the replay `result` (run at `theta`) against what was observed."""
    t = result.table
    n_p = layout.profiles
    x, step, per_seq = theta[:n_p], theta[n_p : 2 * n_p], theta[2 * n_p : 3 * n_p]
    arrival = np.array(t.arrival)
    half = np.array(t.half_rtt)
    uncached = np.array(t.prompt, dtype=np.float64) - np.array(t.cached)
    t_first = arrival + np.array(t.ttft) - half
    t_end = arrival + np.array(t.e2e) - half
    node_of = np.array(t.node)
    model_of = np.array(t.model)
    decodes = np.array(t.output) > 1
    served = np.array(t.status) == SERVED
    use = served & observations.measured & (observations.ttft_s > 0)
    model_index = {m.name: i for i, m in enumerate(topology.models)}
    profile_index = {(p.model, p.accelerator): i for i, p in enumerate(topology.profiles)}
    eq = NormalEquations(
        np.zeros((layout.size, layout.size)),
        np.zeros(layout.size),
        0.0,
        0,
        np.zeros(n_p),
        np.zeros(n_p),
    )
    for n, entry in enumerate(topology.nodes):
        sel = np.flatnonzero(served & (node_of == n))
        if sel.size == 0:
            continue
        slots = np.array([profile_index[(m, entry.accelerator)] for m in entry.models])
        slot_of_model = np.full(len(topology.models), -1)
        for k, m in enumerate(entry.models):
            slot_of_model[model_index[m]] = k
        k_of = slot_of_model[model_of[sel]]
        u = uncached[sel] / entry.gpus
        t_pre = t_first[sel] - u * x[slots[k_of]]
        times, cumulative = _timeline(
            t_pre,
            t_first[sel],
            t_end[sel],
            k_of,
            decodes[sel],
            x[slots],
            step[slots],
            per_seq[slots],
        )
        rows = use[sel]
        if not rows.any():
            continue
        r = sel[rows]
        t_node = arrival[r] + half[r] + routes.transfer[r]

        _add_rows(
            eq,
            layout,
            slots,
            wait=_span(times, cumulative, t_node, t_pre[rows]),
            decode=_span(times, cumulative, t_first[r], t_end[r]),
            own=(slots[k_of[rows]], u[rows], k_of[rows]),
            link=routes.link[r],
            ttft=observations.ttft_s[r] - routes.transfer[r] - routes.rtt_fixed[r],
            e2e=observations.e2e_s[r],
            ttft_observed=observations.ttft_s[r],
        )
    return eq


def _span(times: np.ndarray, cumulative: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per request, each cumulative column's growth from time a to time b."""
    return np.stack([np.interp(b, times, c) - np.interp(a, times, c) for c in cumulative.T], axis=1)


def _timeline(
    t_pre: np.ndarray,
    t_first: np.ndarray,
    t_end: np.ndarray,
    slot: np.ndarray,
    decodes: np.ndarray,
    x: np.ndarray,
    step: np.ndarray,
    per_seq: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Event times of one node and, at each, the cumulative rounds, sequence-rounds and
    prefilled tokens (per GPU) per model slot: columns [R_0..R_K, B_0..B_K, U_0..U_K]."""
    m, k = len(t_pre), len(x)
    times = np.concatenate([t_pre, t_first, t_first, t_end])
    d_pre = np.zeros((4 * m, k))
    d_batch = np.zeros((4 * m, k))
    r = np.arange(m)
    d_pre[r, slot] = 1.0
    d_pre[m + r, slot] = -1.0
    d_batch[2 * m + r, slot] = decodes
    d_batch[3 * m + r, slot] = -decodes.astype(np.float64)
    order = np.argsort(times, kind="stable")
    times = times[order]
    prefilling = np.cumsum(d_pre[order], axis=0)[:-1]
    batch = np.cumsum(d_batch[order], axis=0)[:-1]
    dt = np.diff(times)
    active = batch > 0.5
    rho = (active * (step + per_seq * batch)).sum(axis=1)
    busy_prefill = prefilling.sum(axis=1) > 0.5
    inv_rho = np.where(~busy_prefill & (rho > 0), 1.0 / np.where(rho > 0, rho, 1.0), 0.0)
    rates = np.concatenate(
        [active * inv_rho[:, None], batch * inv_rho[:, None], (prefilling > 0.5) / x], axis=1
    )
    cumulative = np.zeros((len(times), 3 * k))
    cumulative[1:] = np.cumsum(rates * dt[:, None], axis=0)
    return times, cumulative


def _add_rows(
    eq: NormalEquations,
    layout: Layout,
    slots: np.ndarray,
    *,
    wait: np.ndarray,
    decode: np.ndarray,
    own: tuple[np.ndarray, np.ndarray, np.ndarray],  # profile, uncached / g, slot
    link: np.ndarray,
    ttft: np.ndarray,
    e2e: np.ndarray,
    ttft_observed: np.ndarray,
) -> None:
    """Add the TTFT and decode rows of one node's measured requests, weighted."""
    n_p, k, m = layout.profiles, len(slots), len(ttft)
    columns = np.concatenate([n_p + slots, 2 * n_p + slots, slots])  # R→s, B→c, U→x
    a_ttft = np.zeros((m, layout.size))
    a_dec = np.zeros((m, layout.size))
    for j in range(3 * k):
        a_ttft[:, columns[j]] += wait[:, j]
        a_dec[:, columns[j]] += decode[:, j]
    r = np.arange(m)
    np.add.at(a_ttft, (r, own[0]), own[1])
    np.add.at(eq.rounds, own[0], decode[r, own[2]])
    np.add.at(eq.sequence_rounds, own[0], decode[r, k + own[2]])
    fitted_link = link >= 0
    a_ttft[r[fitted_link], 3 * n_p + link[fitted_link]] = 1.0
    w_ttft = 1.0 / ttft_observed
    w_dec = 1.0 / e2e
    a = np.concatenate([a_ttft * w_ttft[:, None], a_dec * w_dec[:, None]])
    b = np.concatenate([ttft * w_ttft, (e2e - ttft_observed) * w_dec])
    eq.ata += a.T @ a
    eq.atb += a.T @ b
    eq.btb += float(b @ b)
    eq.rows += 2 * m
