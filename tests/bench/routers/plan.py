"""The requests one benchmark cell replays: when, from which source, for which model, what text.

The trace's arrivals are scaled so the replay offers `utilisation` of the fleet's serving
capacity for the trace's token mix (`optimizer.capacity`, as `simulate --utilisation` does), and
cut to the first `window_s` seconds. Sources and models are drawn with the run's seed as every
replay draws them (`optimizer.traces.draw_requests`). The prompt text is the emulator's own
mapping of a trace request (`optimizer.emulator.text.trace_prompt`): `input_length` tokens at 4
characters a token, whose 2048-character blocks are shared exactly where the trace's `hash_ids`
are, so the emulated nodes' prefix caches (and a router's text radix tree) see the trace's
sharing. Every router of a cell replays the same plan.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from optimizer.arrivals import draw_requests
from optimizer.capacity import FleetCapacity, TokenMix, load_for_utilisation
from optimizer.emulator.text import trace_prompt
from optimizer.topology import Topology
from optimizer.traces import load_trace


@dataclass(frozen=True)
class Planned:
    """One request of the replay (`at_s`: seconds after the replay starts)."""

    i: int
    at_s: float
    model: str
    source: str
    slo: str | None
    prompt_tokens: int
    max_tokens: int


@dataclass(frozen=True)
class Plan:
    requests: list[Planned]
    load: float
    requests_per_s: float


def make_plan(
    topology: Topology,
    trace: Path,
    *,
    utilisation: float,
    window_s: float,
    seed: int,
    max_requests: int | None = None,
) -> Plan:
    """The first `window_s` seconds of `trace` at the load that offers `utilisation`."""
    whole = load_trace(trace)
    load = load_for_utilisation(FleetCapacity(topology), TokenMix.of(whole), utilisation)
    kept = [r for r in whole if r.arrival_s / load <= window_s][:max_requests]
    drawn = draw_requests(kept, topology, seed)
    planned = [
        Planned(
            i=i,
            at_s=r.arrival_s / load,
            model=d.model,
            source=d.source or "",
            slo=d.slo,
            prompt_tokens=r.prompt_tokens,
            max_tokens=max(1, r.output_tokens),
        )
        for i, (r, d) in enumerate(zip(kept, drawn, strict=True))
    ]
    rate = TokenMix.of(whole).requests_per_s * load
    return Plan(planned, load, rate)


def write_plan(plan: Plan, trace: Path, path: Path) -> None:
    """The plan as JSONL for the load generator, one request a line with its prompt text."""
    hashes = {i: r.hash_ids for i, r in enumerate(load_trace(trace)[: len(plan.requests)])}
    with path.open("w") as out:
        for p in plan.requests:
            line = asdict(p) | {"prompt": trace_prompt(hashes[p.i], p.prompt_tokens)}
            out.write(json.dumps(line) + "\n")
