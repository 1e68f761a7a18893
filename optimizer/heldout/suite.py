"""What the held-out suite runs: its fleets (`optimizer/topologies/heldout/`), every trace the
package ships (`optimizer/data/traces/`), and three loads per fleet and trace, given as a
utilisation of the fleet's capacity for the trace (`optimizer.capacity`).

The loads were chosen once, with heuristics and the oracle only (never a learned policy): on
the first 4,000 requests of each trace, seed 0, 10 s telemetry, latency-first, weighted-score,
least-loaded, prefix-aware and kv-aware (the heuristics that were ever best in a first, coarser
probe), over the grid 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 3, 4, 6, 8. *Light* is 0.25; *moderate*
the largest grid point above 0.3 at which the best of them keeps 90% of the oracle's attainment;
*heavy* the smallest at which it falls below 80%. The margins around issue #18's 85% line keep
each load's regime stable across seeds; the regime a run reports is measured again on its own
seeds (`optimizer.heldout.goals.regime`), so a label that no longer holds shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from optimizer.heldout.guard import HELDOUT_DIR
from optimizer.traces import SHIPPED_TRACES

LABELS: tuple[str, ...] = ("light", "moderate", "heavy")

# (fleet, trace file) -> utilisation at (light, moderate, heavy); the module docstring says how
# they were chosen.
LOADS: dict[tuple[str, str], tuple[float, float, float]] = {
    ("llmd-h100-pool", "mooncake_synthetic.jsonl"): (0.25, 0.75, 1.25),
    ("llmd-h100-pool", "azure_llm_2023_conv.csv"): (0.25, 0.75, 1.0),
    ("retail-edge", "mooncake_synthetic.jsonl"): (0.25, 0.75, 1.0),
    ("retail-edge", "azure_llm_2023_conv.csv"): (0.25, 0.75, 1.0),
    ("sovereign-eu-us", "mooncake_synthetic.jsonl"): (0.25, 0.75, 1.5),
    ("sovereign-eu-us", "azure_llm_2023_conv.csv"): (0.25, 3.0, 6.0),
    ("gpu-poor-regional", "mooncake_synthetic.jsonl"): (0.25, 0.75, 1.25),
    ("gpu-poor-regional", "azure_llm_2023_conv.csv"): (0.25, 1.0, 1.5),
    ("mooncake-long-context", "mooncake_synthetic.jsonl"): (0.25, 1.25, 2.0),
    ("mooncake-long-context", "azure_llm_2023_conv.csv"): (0.25, 1.0, 1.5),
}


@dataclass(frozen=True, slots=True)
class Cell:
    """One fleet, trace and load of the suite."""

    fleet: str
    trace: str
    """The trace's file name in `optimizer/data/traces/`."""
    label: str
    """The regime the load was chosen for: light, moderate or heavy."""
    utilisation: float

    @property
    def topology_path(self) -> Path:
        return HELDOUT_DIR / f"{self.fleet}.yaml"

    @property
    def trace_path(self) -> Path:
        return SHIPPED_TRACES / self.trace


def fleet_names() -> list[str]:
    """The suite's fleets, by file name without `.yaml`."""
    return sorted(path.stem for path in HELDOUT_DIR.glob("*.yaml"))


def trace_names() -> list[str]:
    """Every trace the package ships (both formats)."""
    return sorted(p.name for p in SHIPPED_TRACES.iterdir() if p.suffix in (".csv", ".jsonl"))


def cells(fleets: list[str] | None = None, traces: list[str] | None = None) -> list[Cell]:
    """The suite's cells, every fleet x trace x load, or those of the `fleets` and `traces`
    named; raise ValueError for a name the suite does not have or a pair without loads."""
    known_fleets, known_traces = fleet_names(), trace_names()
    for given, known, what in ((fleets, known_fleets, "fleet"), (traces, known_traces, "trace")):
        unknown = sorted(set(given or ()) - set(known))
        if unknown:
            raise ValueError(
                f"unknown {what} {', '.join(unknown)}; the suite has {', '.join(known)}"
            )
    out = []
    for fleet in fleets or known_fleets:
        for trace in traces or known_traces:
            loads = LOADS.get((fleet, trace))
            if loads is None:
                raise ValueError(f"the suite has no loads for fleet {fleet} with trace {trace}")
            out += [Cell(fleet, trace, label, u) for label, u in zip(LABELS, loads, strict=True)]
    return out
