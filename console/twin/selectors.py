"""Reads for the twin: recorded traffic as observations, and proposals as diffs (profile
values, and link bandwidths)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from console.placement.models import DecisionRecord
from console.twin.models import CalibrationRun
from optimizer.calibration.holdout import IMPROVED, NO_IMPROVEMENT
from optimizer.observations import observation_record

# Rows fetched per round trip: a server-side cursor on PostgreSQL (`iterator`), so memory
# stays flat however many decisions the window holds.
CHUNK_ROWS = 2000
_COLUMNS = (
    "created_at",
    "prompt_tokens",
    "max_output_tokens",
    "prefix_hashes",
    "source",
    "source_site",
    "model",
    "slo",
    "node",
    "ttft_ms",
    "e2e_ms",
    "ok",
    "prefill_node",
)
PROFILE_FIELDS = ("prefill_tokens_per_s", "decode_step_ms", "decode_step_ms_per_seq")


def observation_records(*, since: datetime, until: datetime) -> Iterator[dict[str, Any]]:
    """The decisions made in [since, until) with their outcomes, oldest first, as observation
    records (docs/contracts.md §5, docs/twin.md).

    `timestamp` is the decision time in Unix milliseconds. The output length is the request's
    `max_output_tokens` (outcomes do not report tokens). A decision whose outcome was never
    reported has `ok: false` and null latencies: it still loaded its node, so a replay sends
    it, but nothing was measured.
    """
    rows = (
        DecisionRecord.objects.filter(created_at__gte=since, created_at__lt=until)
        .order_by("created_at", "id")
        .values_list(*_COLUMNS)
        .iterator(chunk_size=CHUNK_ROWS)
    )
    for at, prompt, output, hashes, source, site, model, slo, node, ttft, e2e, ok, prefill in rows:
        measured = ok is not None and ttft is not None and e2e is not None
        yield observation_record(
            timestamp_ms=at.timestamp() * 1000.0,
            input_length=prompt,
            output_length=output,
            hash_ids=hashes or [],
            source=source or None,
            site=site,
            model=model,
            slo=slo or None,
            node=node,
            ttft_ms=ttft if measured else None,
            e2e_ms=e2e if measured else None,
            ok=bool(ok) if measured else False,
            # A split decision (issue #30): the node that ran its prefill; `node` decoded it.
            prefill_node=prefill or None,
        )


def proposal_changes(run: CalibrationRun) -> list[dict[str, Any]]:
    """The profile values a run's proposal would set: one entry per fitted value that differs
    from its nominal, with its interval and samples."""
    changes = []
    for entry in run.report.get("profiles", []):
        if entry.get("status") != "fitted":
            continue
        for field in PROFILE_FIELDS:
            value = entry["values"][field]
            if value["fitted"] == value["nominal"]:
                continue
            changes.append(
                {
                    "model": entry["model"],
                    "accelerator": entry["accelerator"],
                    "field": field,
                    "nominal": value["nominal"],
                    "fitted": value["fitted"],
                    "interval": value["interval"],
                    "samples": value["samples"],
                }
            )
    return changes


def proposal_link_changes(run: CalibrationRun) -> list[dict[str, Any]]:
    """The link bandwidths a run's proposal would set (issue #30): one entry per link whose
    `bandwidth_gbps` the fit pinned down (status `fitted`, fit.py "Identifiability") to a value
    other than its nominal, with its interval and samples (the split requests' transfers that
    crossed it). A bandwidth kept at nominal (too few transfers, not identifiable, or agreeing
    with nominal) is not proposed, as a profile value is not."""
    changes = []
    for entry in run.report.get("links", []):
        value = entry.get("values", {}).get("bandwidth_gbps")
        if value is None or value.get("status") != "fitted":
            continue
        if value["fitted"] == value["nominal"]:
            continue
        changes.append(
            {
                "a": entry["a"],
                "b": entry["b"],
                "field": "bandwidth_gbps",
                "nominal": value["nominal"],
                "fitted": value["fitted"],
                "interval": value["interval"],
                "samples": value["samples"],
            }
        )
    return changes


def proposal_verdict(run: CalibrationRun) -> dict[str, Any]:
    """The run's verdict on its proposal (optimizer/calibration/holdout.py). A report from
    before the held-out verdict existed has none: nothing shows the proposal helps, so it
    reads as 'no_improvement' and applying it takes an override."""
    verdict = run.report.get("verdict") if isinstance(run.report, dict) else None
    if isinstance(verdict, dict) and verdict.get("verdict") in (IMPROVED, NO_IMPROVEMENT):
        return verdict
    return {
        "verdict": NO_IMPROVEMENT,
        "reason": "the run has no held-out verdict (calibrated before the twin held data out)",
        "worse": [],
        "held_out": 0,
    }


def calibration_runs() -> Any:
    """Every calibration run, newest first, with its audit entries."""
    return CalibrationRun.objects.prefetch_related("decisions")
