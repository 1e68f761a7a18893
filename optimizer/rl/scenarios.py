"""Training episodes: windows of a trace, replayed at varied load, prompt length, prefix sharing
and fleet availability, so a policy sees many regimes from one trace and generalises to others.

Each episode draws, from the environment's seeded generator:
- a window of `window` consecutive arrivals of the trace;
- a prompt scale s (log-uniform in `prompt_scale`) that multiplies every prompt length, so a
  short-prompt trace (Azure, p50 ~1k tokens) also covers long-prompt regimes (Mooncake, ~11.6k);
- a utilisation U (log-uniform in `utilisation`) of the fleet's own serving capacity for the
  window's scaled token mix (`optimizer.capacity`), and the load factor on the window's
  arrival rate that offers it, so episodes span light load to clear overload on a 3-node fleet
  and on a 1,000-node one alike (docs/learned-policy.md);
- a prefix-sharing probability: each request then shares a leading run of blocks with one of a
  pool of Zipf-popular "documents" (system prompts, RAG contexts, chat histories), because a
  trace without prefix ids (Azure) would otherwise never move the prefix features;
- with probability `cordon_probability`, a few nodes cordoned from the start, so the policy sees
  fleets of different shapes (the network does not depend on the number of nodes); never more
  than the fleet has, and never every active node that serves the workload's models, so a
  small fleet keeps a node able to serve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from optimizer.arrivals import draw_requests
from optimizer.capacity import FleetCapacity, TokenMix
from optimizer.decide.request import BLOCK_TOKENS, PlacementRequest
from optimizer.sim import ScheduledEvent
from optimizer.topology import Topology
from optimizer.traces import TraceRequest

# Synthetic document block ids start far above any shipped trace's ids (Mooncake's are < 1e6,
# Azure's negative), and each document owns a range of this many ids.
_DOC_ID_BASE = 1 << 40
_DOC_ID_STRIDE = 1 << 16
# Longest prompt after scaling: the longest Mooncake prompts are ~40k tokens (docs/traces.md).
_MAX_PROMPT_TOKENS = 65536


@dataclass(frozen=True, slots=True)
class ScenarioConfig:
    """How training episodes vary (ranges are sampled per episode)."""

    window: int = 4096
    """Arrivals per episode (the episode is truncated after them)."""
    prompt_scale: tuple[float, float] = (2.0, 12.0)
    """Range of the factor on prompt lengths (log-uniform)."""
    utilisation: tuple[float, float] = (0.2, 3.0)
    """Range of the offered load over the fleet's capacity (log-uniform). On fleet-demo with
    the Mooncake trace, 1x is 0.39 and 3.5x (the heavy load of docs/results/learned-policy.md,
    where the best heuristic falls to 77%) 1.35: queueing misses SLOs long before the fluid
    limit of 1."""
    prefix_probability: tuple[float, float] = (0.0, 0.9)
    """Range of the share of requests that start with a shared document prefix."""
    documents: int = 200
    """Size of the pool of shared documents (drawn Zipf-like, exponent 1)."""
    cordon_probability: float = 0.3
    """Chance that an episode starts with 1 to 3 random nodes cordoned (fewer on a small fleet:
    at least one node able to serve is always left)."""
    telemetry_interval_s: tuple[float, float] | None = None
    """Range of the telemetry scrape interval policies see node state through (uniform;
    `optimizer.sim.telemetry`), as the live engine does; None: the simulator's exact state.
    Drawn last, so leaving it None reproduces the other draws exactly."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """One episode's workload, ready for the simulator."""

    requests: list[PlacementRequest]
    arrival_s: list[float]
    events: list[ScheduledEvent]
    load: float
    """Factor on the window's arrival rate."""
    utilisation: float
    """Offered load over the fleet's capacity for the scaled window."""
    prompt_scale: float
    prefix_probability: float
    telemetry_interval_s: float | None = None
    telemetry_seed: int = 0


def _log_uniform(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    low, high = bounds
    return float(math.exp(rng.uniform(math.log(low), math.log(high))))


def _blocks(
    item: TraceRequest, prompt: int, scale: float, rng: np.random.Generator, doc: int | None
) -> tuple[int, ...]:
    """Block ids of `item`'s prompt stretched to `prompt` tokens: block j of the stretched
    prompt is derived from original block floor(j / scale) and j, so two requests sharing an
    original prefix share the stretched one; then, for `doc`, a leading run of that shared
    document's blocks replaces the start."""
    blocks = -(-prompt // BLOCK_TOKENS)
    original = item.hash_ids or (0,)
    last = len(original) - 1
    ids = [(original[min(int(j / scale), last)] << 6) | (j & 63) for j in range(blocks)]
    if doc is not None and blocks:
        shared = max(1, int(blocks * rng.uniform(0.3, 1.0)))
        start = _DOC_ID_BASE + doc * _DOC_ID_STRIDE
        ids[:shared] = range(start, start + shared)
    return tuple(ids)


def _cordoned(topology: Topology, rng: np.random.Generator) -> list[str]:
    """Names of 1 to 3 random nodes to cordon, capped by the number of nodes, sparing the last
    picked of the nodes able to serve (active, running a workload model) when all of them were
    picked: an episode in which every arrival is rejected teaches nothing.

    Where the picks leave a node able to serve (every fleet of more than 3 such nodes, such as
    fleet-demo), the draws and the result are those of a plain `rng.choice`, so training on such
    fleets is reproduced exactly."""
    names = [n.name for n in topology.nodes]
    count = min(int(rng.integers(1, 4)), len(names))
    picked = [str(name) for name in rng.choice(names, size=count, replace=False)]
    wanted = {name for name, _ in topology.model_shares()}
    able = {n.name for n in topology.nodes if n.state == "active" and wanted & set(n.models)}
    if able and able <= set(picked):
        picked.remove(next(name for name in reversed(picked) if name in able))
    return picked


def sample_scenario(
    trace: list[TraceRequest],
    topology: Topology,
    config: ScenarioConfig,
    rng: np.random.Generator,
    capacity: FleetCapacity | None = None,
) -> Scenario:
    """Draw one episode's workload from `trace` with `rng` (deterministic for its state);
    `capacity` is `FleetCapacity(topology)`, built here when not given."""
    window = min(config.window, len(trace))
    start = int(rng.integers(0, len(trace) - window + 1))
    items = trace[start : start + window]
    scale = _log_uniform(rng, config.prompt_scale)
    utilisation = _log_uniform(rng, config.utilisation)
    share = float(rng.uniform(*config.prefix_probability))
    popularity = 1.0 / np.arange(1, config.documents + 1)
    popularity /= popularity.sum()
    t0 = items[0].arrival_s
    stretched: list[TraceRequest] = []
    for item in items:
        prompt = max(1, min(int(item.prompt_tokens * scale), _MAX_PROMPT_TOKENS))
        doc = int(rng.choice(config.documents, p=popularity)) if rng.random() < share else None
        hashes = _blocks(item, prompt, scale, rng, doc)
        stretched.append(
            TraceRequest(item.arrival_s - t0, prompt, max(1, item.output_tokens), hashes)
        )
    mix = TokenMix.of(stretched)
    served = (capacity or FleetCapacity(topology)).requests_per_s(mix)
    # A fleet that serves nothing of the workload has no capacity to be relative to.
    load = utilisation * served / mix.requests_per_s if served > 0 else 1.0
    scaled = [
        TraceRequest(r.arrival_s / load, r.prompt_tokens, r.output_tokens, r.hash_ids)
        for r in stretched
    ]
    requests = draw_requests(scaled, topology, int(rng.integers(0, 2**31 - 1)))
    events: list[ScheduledEvent] = []
    if rng.random() < config.cordon_probability:
        events = [ScheduledEvent(0.0, name, "cordon") for name in _cordoned(topology, rng)]
    interval, telemetry_seed = None, 0
    if config.telemetry_interval_s is not None:
        interval = float(rng.uniform(*config.telemetry_interval_s))
        telemetry_seed = int(rng.integers(0, 2**31 - 1))
    return Scenario(
        requests=requests,
        arrival_s=[r.arrival_s for r in scaled],
        events=events,
        load=load,
        utilisation=utilisation,
        prompt_scale=scale,
        prefix_probability=share,
        telemetry_interval_s=interval,
        telemetry_seed=telemetry_seed,
    )
