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

A split request (issue #30) is on two timelines: its prefill node's, from its prefill start
to its handoff (`handed_off`), and its decode node's, where it is admitted prefilled (no
prefill time) when its KV arrives and decodes; its rows are read off both (`split_rows`).
"""

from __future__ import annotations

import numpy as np

from optimizer.calibration.equations import Layout, NormalEquations
from optimizer.calibration.routes import Routes
from optimizer.calibration.split_rows import Timeline, add_split_rows, span
from optimizer.observations import Observations
from optimizer.sim.engine import SimResult
from optimizer.sim.requests import SERVED
from optimizer.topology import Topology

__all__ = ["Routes", "accumulate", "profile_of_request", "queue_free"]

# Separating queueing from service (issue #26). A TTFT row enters the fit only when, in the
# replay, the request waited at most QUEUE_SHARE of its observed TTFT and its own prefill is at
# least OWN_SHARE of it; every other TTFT row is left out. Why both:
# - a queue wait is a sum over everything served before the request, so in an overloaded
#   replay whose parameters are off it is wrong by much more than the request's own service,
#   and its row pushes that error into the service rates (the harm issue #26 measured: a
#   correct H100 prefill rate moved 17%);
# - an arrival also waits for the decode round in progress, whose phase a replay cannot know
#   (a 0.1% change of a parameter moves it: docs/twin.md). Choosing rows where the replay's
#   wait is ~0 chooses rows where the replay's phase was lucky and the truth's was not, which
#   biases the prefill rate slow; requiring the request's own prefill to dominate its TTFT
#   makes that phase a small part of the row. Measured on the held-out suite's fleets with two
#   profiles perturbed (x1.25 and x0.85), 2,000 Azure requests, spread and concentrated
#   traffic at utilisation 0.6 and 1.5: with OWN_SHARE 0.5, 6 of 16 runs left a pinned value
#   more than 10% from the truth (fast prefill rates fitted 10-14% slow); 0.7, 1; 0.85, none.
# Decode rows (E2E − TTFT) hold no queue wait and are always kept.
QUEUE_SHARE = 0.05
OWN_SHARE = 0.85


def queue_free(
    wait: np.ndarray, own: np.ndarray, ttft_observed: np.ndarray, queue_share: float = QUEUE_SHARE
) -> np.ndarray:
    """Which TTFT rows to fit: the replay's wait at most `queue_share` of the observed TTFT and
    the request's own prefill at least OWN_SHARE of it (the rule above QUEUE_SHARE)."""
    return (wait <= queue_share * ttft_observed) & (own >= OWN_SHARE * ttft_observed)


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
    fit: np.ndarray | None = None,
    queue_share: float | None = QUEUE_SHARE,
    held_prefill: np.ndarray | None = None,
    own_scale: np.ndarray | None = None,
) -> NormalEquations:
    """The normal equations of the replay `result` (run at `theta`) against what was observed,
    over the requests in `fit` (default: all): the rest are held out to judge the fit. With
    `queue_share`, TTFT rows of requests the replay queued for longer than that share of their
    observed TTFT are left out (QUEUE_SHARE); None keeps them all. `held_prefill` (per
    profile): prefill rates held at nominal because their evidence is confounded by queueing
    (fit.thin_evidence); a decode row in which their prefills fill more than QUEUE_SHARE of the
    decode is left out too, so a held rate's error does not pass into the decode terms.
    `own_scale` (per profile): the factor a row's own prefill time is judged at by the
    OWN_SHARE rule (second_look.own_factors; default 1)."""
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
    scale = np.ones(n_p) if own_scale is None else own_scale
    if fit is not None:
        use &= fit
    model_index = {m.name: i for i, m in enumerate(topology.models)}
    profile_index = {(p.model, p.accelerator): i for i, p in enumerate(topology.profiles)}
    eq = NormalEquations(
        np.zeros((layout.size, layout.size)),
        np.zeros(layout.size),
        0.0,
        0,
        np.zeros(n_p),
        np.zeros(n_p),
        np.zeros(layout.size, dtype=np.int64),
        np.zeros(n_p, dtype=np.int64),
        np.zeros(n_p, dtype=np.int64),
        np.zeros((n_p, 3)),
        np.zeros((n_p, 3)),
        np.zeros(n_p, dtype=np.int64),
    )
    split = routes.split
    node_index = {node.name: i for i, node in enumerate(topology.nodes)}
    prefill_of = np.array(
        [-1 if p is None else node_index[p] for p in observations.prefill_node], dtype=np.int64
    )
    handed = np.array(t.handed_off)
    link_theta = theta[3 * n_p :]
    timelines: dict[int, Timeline] = {}
    for n, entry in enumerate(topology.nodes):
        sel = np.flatnonzero(served & ~split & (node_of == n))
        # Split requests: prefilled here and handed off, or admitted here prefilled.
        pre = np.flatnonzero(served & split & (prefill_of == n))
        dec = np.flatnonzero(served & split & (node_of == n))
        if sel.size + pre.size + dec.size == 0:
            continue
        slots = np.array([profile_index[(m, entry.accelerator)] for m in entry.models])
        slot_of_model = np.full(len(topology.models), -1)
        for k, m in enumerate(entry.models):
            slot_of_model[model_index[m]] = k
        k_of = slot_of_model[model_of[sel]]
        u = uncached[sel] / entry.gpus
        t_pre = t_first[sel] - u * x[slots[k_of]]
        k_pre, k_dec = slot_of_model[model_of[pre]], slot_of_model[model_of[dec]]
        u_pre = uncached[pre] / entry.gpus
        times, cumulative = _timeline(
            np.concatenate([t_pre, handed[pre] - u_pre * x[slots[k_pre]], t_first[dec]]),
            np.concatenate([t_first[sel], handed[pre], t_first[dec]]),
            np.concatenate([t_end[sel], handed[pre], t_end[dec]]),
            np.concatenate([k_of, k_pre, k_dec]),
            np.concatenate([decodes[sel], np.zeros(pre.size, dtype=bool), decodes[dec]]),
            x[slots],
            step[slots],
            per_seq[slots],
        )
        if pre.size or dec.size:
            timelines[n] = Timeline(times, cumulative, slots, slot_of_model, entry.gpus)
        rows = use[sel]
        if not rows.any():
            continue
        r = sel[rows]
        t_node = arrival[r] + half[r] + routes.to_fixed[r] + routes.to_coef[r] @ link_theta
        ttft_observed = observations.ttft_s[r]
        wait = span(times, cumulative, t_node, t_pre[rows])
        keep = (
            np.ones(r.size, dtype=bool)
            if queue_share is None
            else queue_free(
                t_pre[rows] - t_node,
                u[rows] * x[slots[k_of[rows]]] * scale[slots[k_of[rows]]],
                ttft_observed,
                queue_share,
            )
        )
        own_profile = slots[k_of[rows]]
        np.add.at(eq.queue_free, own_profile, keep)
        np.add.at(eq.queued, own_profile, ~keep)

        decode = span(times, cumulative, t_first[r], t_end[r])
        keep_decode = np.ones(r.size, dtype=bool)
        if held_prefill is not None:
            # Prefill time of held profiles within the decode: prefilled tokens per GPU x x.
            k = len(slots)
            held_time = decode[:, 2 * k : 3 * k] @ (x[slots] * held_prefill[slots])
            keep_decode = held_time <= QUEUE_SHARE * (observations.e2e_s[r] - ttft_observed)
            np.add.at(eq.decode_left_out, own_profile, ~keep_decode)
        _add_rows(
            eq,
            layout,
            slots,
            wait=wait,
            decode=decode,
            own=(slots[k_of[rows]], u[rows], k_of[rows]),
            link=routes.coef[r],
            ttft=observations.ttft_s[r] - routes.transfer[r] - routes.rtt_fixed[r],
            e2e=observations.e2e_s[r],
            ttft_observed=ttft_observed,
            keep_ttft=keep,
            keep_decode=keep_decode,
        )
    if timelines:
        add_split_rows(
            eq,
            layout,
            theta,
            timelines,
            np.flatnonzero(use & split),
            node_of=node_of,
            prefill_of=prefill_of,
            columns=(arrival, t_first, t_end, handed, uncached, model_of),
            routes=routes,
            observations=observations,
            keep_rule=None
            if queue_share is None
            else lambda wait, own, ttft: wait <= queue_share * ttft,
        )
    return eq


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
    link: np.ndarray,  # per row, the coefficients of θ's link columns (Routes.coef)
    ttft: np.ndarray,
    e2e: np.ndarray,
    ttft_observed: np.ndarray,
    keep_ttft: np.ndarray,
    keep_decode: np.ndarray,
) -> None:
    """Add the decode rows of one node's measured requests in `keep_decode`, and the TTFT rows
    of those in `keep_ttft`, weighted."""
    n_p, k, m = layout.profiles, len(slots), len(ttft)
    columns = np.concatenate([n_p + slots, 2 * n_p + slots, slots])  # R→s, B→c, U→x
    a_ttft = np.zeros((m, layout.size))
    a_dec = np.zeros((m, layout.size))
    for j in range(3 * k):
        a_ttft[:, columns[j]] += wait[:, j]
        a_dec[:, columns[j]] += decode[:, j]
    r = np.arange(m)
    np.add.at(a_ttft, (r, own[0]), own[1])
    own_rounds = decode[r, own[2]]
    np.add.at(eq.rounds, own[0], own_rounds)
    np.add.at(eq.sequence_rounds, own[0], decode[r, k + own[2]])
    batch = np.divide(decode[r, k + own[2]], own_rounds, out=np.zeros(m), where=own_rounds > 0)
    for moments, value, has in (
        (eq.prompt_moments, own[1], np.ones(m, dtype=bool)),
        (eq.batch_moments, batch, own_rounds > 0),
    ):
        np.add.at(moments, own[0][has], np.stack([np.ones(m), value, value**2], axis=1)[has])
    a_ttft[:, 3 * n_p :] = link
    w_ttft = 1.0 / ttft_observed
    w_dec = 1.0 / e2e
    kd = keep_decode
    a = np.concatenate([a_ttft[keep_ttft] * w_ttft[keep_ttft, None], a_dec[kd] * w_dec[kd, None]])
    b = np.concatenate(
        [ttft[keep_ttft] * w_ttft[keep_ttft], (e2e[kd] - ttft_observed[kd]) * w_dec[kd]]
    )
    eq.add(a, b)
