"""The calibration report's entries: per fitted value nominal, fitted, interval and samples
(docs/twin.md, "Report"), and the TTFT pairs the dashboard plots."""

from __future__ import annotations

from typing import Any

import numpy as np

from optimizer.calibration.fit import Step, interval
from optimizer.observations import Observations
from optimizer.topology import Topology

PAIRS_IN_REPORT = 400  # sampled (observed, predicted) TTFT pairs for the dashboard's plot


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
    samples: np.ndarray,
    fitted: np.ndarray,
    mean_batch: np.ndarray,
) -> list[dict[str, Any]]:
    n = len(fleet.profiles)
    entries = []
    for i, (old, new) in enumerate(zip(fleet.profiles, calibrated.profiles, strict=True)):
        use = step if fitted[i] else None
        count = int(samples[i])

        def zsd(j: int, use: Step | None = use) -> tuple[float, float] | None:
            return None if use is None else (float(use.z[j]), float(use.sd[j]))

        entries.append(
            {
                "model": old.model,
                "accelerator": old.accelerator,
                "status": "fitted" if use is not None else "insufficient_data",
                "samples": count,
                # The decode terms are measured around this batch size: step + per_seq * batch
                # is well determined there even when per_seq alone is not (docs/twin.md).
                "mean_decode_batch": round(float(mean_batch[i]), 3),
                "values": {
                    "prefill_tokens_per_s": _value(
                        old.prefill_tokens_per_s, new.prefill_tokens_per_s, zsd(i), count, True
                    ),
                    "decode_step_ms": _value(
                        old.decode_step_ms, new.decode_step_ms, zsd(n + i), count
                    ),
                    "decode_step_ms_per_seq": _value(
                        old.decode_step_ms_per_seq,
                        new.decode_step_ms_per_seq,
                        zsd(2 * n + i),
                        count,
                    ),
                },
            }
        )
    return entries


def link_entries(
    fleet: Topology,
    calibrated: Topology,
    step: Step | None,
    links: tuple[int, ...],
    samples: np.ndarray,
    min_samples: int,
) -> list[dict[str, Any]]:
    base = 3 * len(fleet.profiles)
    place = {i: j for j, i in enumerate(links)}
    entries = []
    for i, (old, new) in enumerate(zip(fleet.links, calibrated.links, strict=True)):
        j = place.get(i)
        zsd = (
            None
            if j is None or step is None
            else (float(step.z[base + j]), float(step.sd[base + j]))
        )
        entries.append(
            {
                "a": old.a,
                "b": old.b,
                "status": "fitted"
                if zsd is not None
                else ("insufficient_data" if samples[i] < min_samples else "not_fitted"),
                "samples": int(samples[i]),
                "values": {"rtt_ms": _value(old.rtt_ms, new.rtt_ms, zsd, int(samples[i]))},
            }
        )
    return entries


def ttft_pairs(
    observations: Observations, before: np.ndarray, after: np.ndarray
) -> list[list[float]]:
    """Up to PAIRS_IN_REPORT [observed, before, after] TTFTs in ms, evenly over the requests."""
    use = np.flatnonzero(observations.measured & np.isfinite(before) & np.isfinite(after))
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
