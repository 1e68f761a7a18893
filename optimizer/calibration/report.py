"""The calibration report's entries: per fitted value nominal, fitted, interval and samples
(docs/twin.md, "Report"), and the TTFT pairs the dashboard plots."""

from __future__ import annotations

from typing import Any

import numpy as np

from optimizer.calibration.equations import NormalEquations
from optimizer.calibration.fit import MIN_QUEUE_FREE_ROWS, Step, interval
from optimizer.observations import Observations
from optimizer.topology import Topology
from optimizer.topology_entries import Link

PAIRS_IN_REPORT = 400  # sampled (observed, predicted) TTFT pairs for the dashboard's plot
# A profile's values in θ's order (design.Layout): x, s, c.
PROFILE_VALUES = ("prefill_tokens_per_s", "decode_step_ms", "decode_step_ms_per_seq")


def _identifiability(
    step: Step | None, eq: NormalEquations | None, j: int, spread: float | None
) -> dict[str, Any]:
    """How much data pins θ[j] down: the rows informing it, the relative half-width of its 95%
    interval from the data alone (fit.py; null: the data leaves it open), and the spread of
    what separates it from its neighbours (null for a link)."""
    rows = 0 if eq is None else int(eq.support[j])
    width = None if step is None else float(step.relative_ci[j])
    return {
        "rows": rows,
        "relative_ci": round(width, 6) if width is not None and np.isfinite(width) else None,
        "spread": None if spread is None else round(spread, 4),
    }


def _status(enough: bool, step: Step | None, j: int) -> str:
    """fitted: moved to what the data pins down; agrees_with_nominal: pinned down, and its
    interval holds nominal, so it is kept; not_identifiable: enough requests, but they do
    not pin it down, so it is kept; insufficient_data: too few requests, kept."""
    if not enough:
        return "insufficient_data"
    if step is not None and step.identified[j]:
        return "fitted"
    if step is not None and step.agrees[j]:
        return "agrees_with_nominal"
    return "not_identifiable"


def _confounded(step: Step | None, j: int) -> bool:
    """Whether θ[j] was held because its only evidence is confounded by queueing."""
    return step is not None and step.confounded is not None and bool(step.confounded[j])


def _value(
    nominal: float,
    fitted: float,
    z_sd: tuple[float, float] | None,
    samples: int,
    invert: bool = False,
) -> dict[str, Any]:
    """One fitted value: nominal, fitted, its 95% interval (None when held) and samples."""
    bounds: list[float | None] | None = None
    if z_sd is not None:
        lo, hi = interval(*z_sd)
        z = z_sd[0]
        if invert:  # a rate is 1/θ: its interval is the inverted interval of θ
            bounds = [fitted * z / hi if hi > 0 else None, fitted * z / lo if lo > 0 else None]
        else:
            bounds = [fitted * lo / z, fitted * hi / z] if z > 0 else [0.0, fitted]
    return {"nominal": nominal, "fitted": fitted, "interval": bounds, "samples": samples}


def profile_entries(
    fleet: Topology,
    calibrated: Topology,
    step: Step | None,
    eq: NormalEquations | None,
    samples: np.ndarray,
    fitted: np.ndarray,
    *,
    queue_free_judged: np.ndarray | None = None,
) -> list[dict[str, Any]]:
    """Per profile its status, samples, mean decode batch, queue-free share of its TTFT rows,
    and per value (PROFILE_VALUES) nominal, fitted, interval, status and identifiability."""
    n = len(fleet.profiles)
    mean_batch = np.zeros(n) if eq is None else eq.mean_batch()
    prompt_cv, batch_cv = (np.zeros(n), np.zeros(n)) if eq is None else eq.spread()
    entries = []
    for i, (old, new) in enumerate(zip(fleet.profiles, calibrated.profiles, strict=True)):
        count = int(samples[i])
        values: dict[str, Any] = {}
        for name, j, spread in zip(
            PROFILE_VALUES,
            (i, n + i, 2 * n + i),
            (prompt_cv[i], batch_cv[i], batch_cv[i]),
            strict=True,
        ):
            use = step is not None and fitted[i] and bool(step.identified[j] or step.agrees[j])
            zsd = (float(step.z[j]), float(step.sd[j])) if use and step is not None else None
            entry = _value(
                getattr(old, name), getattr(new, name), zsd, count, name == PROFILE_VALUES[0]
            )
            entry["status"] = _status(bool(fitted[i]), step, j)
            entry["identifiability"] = _identifiability(
                step if fitted[i] else None, eq, j, float(spread)
            )
            if fitted[i] and _confounded(step, j):
                # Counted at the best iterate of the fit that moved it (propose.py); ttft_rows
                # counts them at the refit that held it.
                judged = (
                    queue_free_judged
                    if queue_free_judged is not None
                    else (None if eq is None else eq.queue_free)
                )
                entry["queue_free_rows"] = 0 if judged is None else int(judged[i])
                entry["reason"] = (
                    f"{entry['queue_free_rows']} queue-free TTFT rows, "
                    f"fewer than {MIN_QUEUE_FREE_ROWS}: its other rows are confounded by "
                    "queueing, so it is kept at nominal"
                )
            values[name] = entry
        statuses = {v["status"] for v in values.values()}
        queued = 0 if eq is None else int(eq.queued[i])
        free = 0 if eq is None else int(eq.queue_free[i])
        entries.append(
            {
                "model": old.model,
                "accelerator": old.accelerator,
                # fitted: some value moved; not_identifiable: enough requests, but none of
                # its values is pinned down by them; insufficient_data: too few requests.
                "status": "fitted"
                if "fitted" in statuses
                else (
                    "insufficient_data"
                    if not fitted[i]
                    else statuses.pop()
                    if len(statuses) == 1
                    else "not_identifiable"
                ),
                "samples": count,
                # The decode terms are measured around this batch size: step + per_seq * batch
                # is well determined there even when per_seq alone is not (docs/twin.md).
                "mean_decode_batch": round(float(mean_batch[i]), 3),
                # TTFT rows kept as queue-free (design.QUEUE_SHARE) and left out as queued.
                "ttft_rows": {"queue_free": free, "queued": queued},
                # Decode rows left out because held prefill rates filled them (design.py).
                "decode_rows_left_out": 0
                if eq is None or not len(eq.decode_left_out)
                else int(eq.decode_left_out[i]),
                "values": values,
            }
        )
    return entries


def kept_bandwidths(
    nominal: Topology, fitted: Topology, identified: np.ndarray, transfers: tuple[int, ...]
) -> tuple[Link, ...]:
    """`fitted`'s links with the bandwidth of each link in `transfers` whose value was not
    identified (`identified`, in `transfers`' order) back at nominal exactly."""
    links = list(fitted.links)
    for j, i in enumerate(transfers):
        if not identified[j]:
            links[i] = links[i].model_copy(
                update={"bandwidth_gbps": nominal.links[i].bandwidth_gbps}
            )
    return tuple(links)


def link_entries(
    fleet: Topology,
    calibrated: Topology,
    step: Step | None,
    links: tuple[int, ...],
    samples: np.ndarray,
    min_samples: int,
    *,
    transfers: tuple[tuple[int, ...], np.ndarray] | None = None,
) -> list[dict[str, Any]]:
    """Per link its RTT's status and value; a link that carried split requests' KV (issue
    #30; `transfers`: the links whose bandwidth is fitted, and per link the transfers that
    crossed it) also its `bandwidth_gbps`, with its own status and samples."""
    base = 3 * len(fleet.profiles)
    fitted_bw, transfer_samples = transfers if transfers is not None else ((), None)
    bw_place = {i: base + len(links) + j for j, i in enumerate(fitted_bw)}
    place = {i: j for j, i in enumerate(links)}
    entries = []
    for i, (old, new) in enumerate(zip(fleet.links, calibrated.links, strict=True)):
        j = place.get(i)
        zsd = (
            None
            if j is None or step is None
            else (float(step.z[base + j]), float(step.sd[base + j]))
        )
        if j is not None and step is not None:
            status = _status(True, step, base + j)
            if status == "not_identifiable":
                zsd = None
        else:
            status = "insufficient_data" if samples[i] < min_samples else "not_fitted"
        values = {"rtt_ms": _value(old.rtt_ms, new.rtt_ms, zsd, int(samples[i]))}
        if transfer_samples is not None and transfer_samples[i] > 0:
            values["bandwidth_gbps"] = _bandwidth(
                old.bandwidth_gbps,
                new.bandwidth_gbps,
                step,
                bw_place.get(i),
                int(transfer_samples[i]),
            )
        entries.append(
            {
                "a": old.a,
                "b": old.b,
                "status": status,
                "samples": int(samples[i]),
                "values": values,
            }
        )
    return entries


def _bandwidth(
    nominal: float, fitted: float, step: Step | None, j: int | None, samples: int
) -> dict[str, Any]:
    """A link's bandwidth: θ holds its seconds per byte, so its interval is inverted."""
    status = "insufficient_data" if j is None else _status(True, step, j)
    zsd = None
    if j is not None and step is not None and status in ("fitted", "agrees_with_nominal"):
        zsd = (float(step.z[j]), float(step.sd[j]))
    entry = _value(nominal, fitted, zsd, samples, invert=True)
    entry["status"] = status
    return entry


def ttft_pairs(
    observations: Observations, before: np.ndarray, after: np.ndarray, among: np.ndarray
) -> list[list[float]]:
    """Up to PAIRS_IN_REPORT [observed, before, after] TTFTs in ms, evenly over the requests
    in `among` (the held-out ones: the plot shows what the fit did not see)."""
    use = np.flatnonzero(observations.measured & among & np.isfinite(before) & np.isfinite(after))
    if use.size > PAIRS_IN_REPORT:
        use = use[np.linspace(0, use.size - 1, PAIRS_IN_REPORT).astype(np.int64)]
    return [
        [
            round(float(observations.ttft_s[i]) * 1e3, 3),
            round(float(before[i]) * 1e3, 3),
            round(float(after[i]) * 1e3, 3),
        ]
        for i in use
    ]
