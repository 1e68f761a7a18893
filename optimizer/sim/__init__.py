"""Fleet simulator: discrete-event replay of a trace over a topology under one policy.

Timing model (docs/contracts.md §1 semantics; deterministic for a seed)
---------------------------------------------------------------
A request arriving at time a from a source at site S is placed at once by the policy, among
the candidates that pass the hard constraints (`optimizer.constraints`); if there are none it
is rejected. Sent to node N:

- Network: the prompt reaches N after RTT/2 plus its transfer, 4 bytes a token over the
  S-N link's bandwidth (no transfer time or egress within a site); the first and last tokens
  come back after the other RTT/2. So the RTT counts once in TTFT (and once in E2E).
- Queue: N serves its queue first come, first served. The head is admitted when the node has
  a batch slot for its model (`max_batch * gpus` sequences) and KV room for its whole sequence
  (prompt + output tokens times the model's `kv_bytes_per_token`, reserved at admission, as
  schedulers that reserve the maximum length do; vLLM's growth and preemption are not
  modelled). A head that cannot be admitted blocks those behind it (`optimizer.sim.occupancy`).
- Prefill: the uncached part of the prompt takes `tokens / (prefill_tokens_per_s * gpus)`
  and yields the first token. It runs between decode steps and stalls them (vLLM without
  chunked prefill: waiting prefills go first), one request at a time. With
  `--chunked-prefill` (`optimizer.sim.interference`) a node that runs both phases instead
  steps through a prefill in chunks of a token budget, each step also a decode round: the
  prefill pays for the decodes beside it, and they go on while it runs.
- Prefix cache: the leading blocks of the prompt's `hash_ids` found in N's LRU cache (keyed per
  model, within the KV room running sequences leave free) are not prefilled; after prefill,
  the prompt's blocks are cached.
- Decode: each round yields one token for every running sequence and takes
  `decode_step_ms + decode_step_ms_per_seq * batch`; the batch is fixed between events, so
  whole runs of rounds are jumped at once (see `optimizer.sim.node`).

  TTFT = RTT + transfer + queue wait + prefill of uncached tokens
  E2E  = TTFT + (output tokens - 1) decode rounds (with any prefill stalls between them)

- Cost: each request pays its node's `usd_per_hour` prorated over its prefill plus 1/batch of
  every decode step it takes part in, plus the egress of its prompt bytes. Idle time is
  reported apart (`idle_cost_usd`).
- Operations (`optimizer.sim.schedule`): drained or cordoned nodes take no new requests and
  finish their work; a failed node loses its running sequences and cache, its queued requests
  are placed again (keeping their arrival time), and requests still on their way to it are
  placed again when they arrive.

Telemetry (`optimizer.sim.telemetry`, `--telemetry-interval S`): policies then see node state
as the live engine does (samples S seconds apart, delayed, plus the engine's own count of what
it sent since); the nodes above still run on the exact state. With `--stale-after S` nodes
whose sample is older than S seconds are left out while fresh ones remain, and with
`--breakers` per-node circuit breakers trip on this run's failures: the live engine's own
filters (`optimizer.decide.filters`), run by the same pipeline (`optimizer.sim.placer`, the
simulator's control plane; `optimizer.sim.engine` is its event loop). Both are off by default.
With `--deciders K` (and telemetry), K deciders split the requests, each with its own live
state unless `--shared-view` (`optimizer.sim.deciders`).

Prefill and decode (issue #30): a node runs only the phases its `role` allows, and with a
split stage (`--split`, `optimizer.decide.pickers.split`) a long prompt may be split. Its
prompt then goes to the prefill node, which reserves the prompt's KV, prefills the uncached
part (its prefix cache counts as for any prefill) and keeps the KV until it has crossed to
the decode node's site (the link's RTT plus `prompt tokens x kv_bytes_per_token` at its
bandwidth; `INTRA_SITE_KV_GBPS` within a site); the decode node queues it as any arrival,
admits it with its whole sequence's KV and no prefill, caches its prompt's blocks, and its
first token counts from that admission (plus the way back to the source). Egress is paid on
the KV bytes between sites too.

A request meets its SLO when it is served, its TTFT and E2E are within the SLO's
`ttft_p95_ms` and `e2e_p95_ms`, and its cost per 1k is within `max_usd_per_1k` when set.
"""

from __future__ import annotations

from collections.abc import Sequence

from optimizer.decide.filters.breakers import BreakerConfig
from optimizer.decide.framework import Splitter
from optimizer.decide.request import PlacementRequest
from optimizer.decide.scorers.base import Policy
from optimizer.sim.deciders import Deciders
from optimizer.sim.engine import SimResult, Simulator
from optimizer.sim.interference import ChunkedPrefill
from optimizer.sim.schedule import ScheduledEvent, load_schedule, parse_schedule
from optimizer.sim.telemetry import TelemetryModel
from optimizer.topology import Topology


def simulate(
    topology: Topology,
    policy: Policy,
    requests: Sequence[PlacementRequest],
    arrival_s: Sequence[float],
    *,
    events: Sequence[ScheduledEvent] = (),
    telemetry: TelemetryModel | None = None,
    breakers: BreakerConfig | None = None,
    stale_after_s: float | None = None,
    deciders: Deciders | None = None,
    splitter: Splitter | None = None,
    chunked_prefill: ChunkedPrefill | None = None,
    progress: bool = False,
    desc: str = "simulate",
) -> SimResult:
    """Replay `requests` arriving at `arrival_s` (sorted) under `policy`; with `telemetry`,
    the policy sees node state through it (`optimizer.sim.telemetry`), else exactly; with
    `breakers` and `stale_after_s`, the live engine's breakers and staleness filter run too
    (`Simulator`); with `deciders`, several deciders place the requests, each with its own
    live state unless they share one (`optimizer.sim.deciders`); with `splitter`, the
    pipeline's split stage may send a request's prefill and decode to two nodes; with
    `chunked_prefill`, nodes running both phases interleave them (`optimizer.sim.interference`)."""
    simulator = Simulator(
        topology,
        policy,
        requests,
        arrival_s,
        events,
        telemetry,
        breakers=breakers,
        stale_after_s=stale_after_s,
        deciders=deciders,
        splitter=splitter,
        chunked_prefill=chunked_prefill,
    )
    return simulator.run(progress=progress, desc=desc)


__all__ = [
    "ChunkedPrefill",
    "Deciders",
    "ScheduledEvent",
    "SimResult",
    "Simulator",
    "TelemetryModel",
    "load_schedule",
    "parse_schedule",
    "simulate",
]
