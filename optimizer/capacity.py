"""The fleet's serving capacity for a workload, so load can be stated relative to it.

A load factor on a trace's arrival rate (`--load`) means nothing across fleets: 1x of the
Mooncake trace saturates `fleet-demo.yaml` and is idle time for a 1,000-node fleet. The
*utilisation* U of a workload is its arrival rate over the fleet's capacity for it, so U = 1
is the fluid saturation point on any fleet (docs/learned-policy.md).

Capacity, from the topology and the trace's token mix (mean prompt P and output O tokens), by
the serving model of docs/contracts.md §1:
- A node serving model m spends `P / prefill_rate` per request on prefill and, decoding at
  batch B, `O * step(B) / B` on its share of decode steps, where `step(B) = decode_step_ms +
  decode_step_ms_per_seq * B`. B is the batch its limits allow: `max_batch * gpus`, and no
  more sequences of P + O tokens than its KV memory holds. Its rate for m is one over the sum.
  Prefix-cache hits are not counted (capacity is a floor, the cache only adds to it).
- Only active nodes that some source reaches count (residency is not considered).
- A node serving several models splits its time between them; the split that serves the
  workload's model shares at the highest total rate is found by multiplicative weights (time
  moves towards the models whose capacity binds), a close approximation of the linear
  programme's optimum in a few dozen vectorised passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.decision import node_view
from optimizer.topology import Topology
from optimizer.traces import TraceRequest

_SPLIT_ROUNDS = 60


@dataclass(frozen=True, slots=True)
class TokenMix:
    """Mean prompt and output tokens per request, and arrivals per second at 1x."""

    prompt_tokens: float
    output_tokens: float
    requests_per_s: float

    @classmethod
    def of(cls, trace: Sequence[TraceRequest]) -> TokenMix:
        if not trace:
            raise ValueError("an empty trace has no token mix")
        span = trace[-1].arrival_s - trace[0].arrival_s
        # One request, or all at once: count them as arriving within one second.
        rate = (len(trace) - 1) / span if span > 0 and len(trace) > 1 else float(len(trace))
        return cls(
            prompt_tokens=float(np.mean([r.prompt_tokens for r in trace])),
            output_tokens=float(np.mean([r.output_tokens for r in trace])),
            requests_per_s=rate,
        )


class FleetCapacity:
    """Per (node, model) serving parameters of a topology, built once; `requests_per_s` then
    answers for any token mix in a few vectorised passes (training calls it per episode)."""

    def __init__(self, topology: Topology) -> None:
        shares = topology.model_shares()
        self.models = [name for name, _ in shares]
        weights = np.array([share for _, share in shares], dtype=np.float64)
        self.shares = weights / weights.sum()
        origins = {s.site for s in topology.sources} or {topology.sites[0].name}
        nodes = [
            n
            for n in topology.nodes
            if n.state == "active" and any((o, n.site) in topology.routes for o in origins)
        ]
        shape = (len(nodes), len(self.models))
        self.serves = np.zeros(shape, dtype=bool)
        self.prefill = np.ones(shape)
        self.step_ms = np.ones(shape)
        self.step_ms_per_seq = np.zeros(shape)
        self.max_batch = np.ones(shape)
        self.kv_tokens = np.ones(shape)
        for i, node in enumerate(nodes):
            for j, model in enumerate(self.models):
                view = node_view(topology, node.name, model)
                if view.max_batch <= 0 or model not in node.models:
                    continue
                self.serves[i, j] = True
                self.prefill[i, j] = view.prefill_tokens_per_s
                self.step_ms[i, j] = view.decode_step_ms
                self.step_ms_per_seq[i, j] = view.decode_step_ms_per_seq
                self.max_batch[i, j] = view.max_batch
                self.kv_tokens[i, j] = view.kv_capacity_bytes / max(view.kv_bytes_per_token, 1)

    def node_rates(self, prompt_tokens: float, output_tokens: float) -> np.ndarray:
        """Requests per second each node would serve of each model with all its time."""
        tokens = max(prompt_tokens + output_tokens, 1.0)
        batch = np.clip(np.floor(self.kv_tokens / tokens), 1.0, self.max_batch)
        step_s = (self.step_ms + self.step_ms_per_seq * batch) / 1000.0
        seconds = prompt_tokens / self.prefill + output_tokens * step_s / batch
        return np.where(self.serves, 1.0 / np.maximum(seconds, 1e-12), 0.0)

    def requests_per_s(self, mix: TokenMix) -> float:
        """The highest total arrival rate at the workload's model shares the fleet serves."""
        rates = self.node_rates(mix.prompt_tokens, mix.output_tokens)
        if not self.serves.any() or not (rates.sum(axis=0)[self.shares > 0] > 0).all():
            return 0.0
        # Time split of each node over its models, started in proportion to the shares.
        split = np.where(self.serves, self.shares, 0.0)
        split /= np.maximum(split.sum(axis=1, keepdims=True), 1e-300)
        best = 0.0
        for _ in range(_SPLIT_ROUNDS):
            per_model = (rates * split).sum(axis=0)
            ratio = per_model / self.shares
            best = max(best, float(ratio.min()))
            # More time to the models whose capacity per unit of share binds.
            pressure = np.where(self.serves, (ratio.min() / np.maximum(ratio, 1e-300)), 0.0)
            split *= np.sqrt(pressure)
            split /= np.maximum(split.sum(axis=1, keepdims=True), 1e-300)
        return best


def load_for_utilisation(capacity: FleetCapacity, mix: TokenMix, utilisation: float) -> float:
    """The factor on the trace's arrival rate that offers `utilisation` of the capacity."""
    served = capacity.requests_per_s(mix)
    if served <= 0:
        raise ValueError("no node that a source reaches serves every model of the workload")
    return utilisation * served / mix.requests_per_s


def utilisation_of_load(capacity: FleetCapacity, mix: TokenMix, load: float) -> float:
    """The utilisation that `load` x the trace's arrival rate offers (inf without capacity)."""
    served = capacity.requests_per_s(mix)
    return float("inf") if served <= 0 else load * mix.requests_per_s / served
