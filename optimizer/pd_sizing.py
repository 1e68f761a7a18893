"""Prefill and decode pool sizes for a workload, as DistServe places them (issue #30).

DistServe (Zhong et al., "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized
Large Language Model Serving", OSDI'24, §4) chooses the number of prefill and decode instances
from the workload so that each phase's goodput matches the arrival rate: a pool's size is the
work of its phase per request over one instance's rate. Here the work is stated in GPU-seconds
per request, from the trace's mean prompt P and output O tokens and the topology's profiles,
by the serving model of docs/contracts.md §1 (the same terms as `optimizer.capacity`):

- prefill: `P / prefill_tokens_per_s` per GPU (prefix-cache hits not counted, as capacity);
- decode: `O * step(B) / B` per GPU, `step(B) = decode_step_ms + decode_step_ms_per_seq * B`,
  at the batch B a decode GPU runs when full: `max_batch`, or fewer when its KV room (memory
  after the weights) cannot hold B whole sequences of P + O tokens, since the simulator (like
  schedulers that reserve the maximum length) reserves a sequence's whole KV at admission.
  Full batches are the assumption DistServe's decode sizing makes too (decode instances are
  sized to run at their batch limit); a decode pool running emptier spends more GPU-seconds
  per request, so the pools below are the smallest that balance.

A group of GPUs of one accelerator (one region's H100s, say) serving both phases balances
them when the share `d / (p + d)` of its GPU time decodes (p, d: prefill and decode
GPU-seconds per request on that accelerator), whatever the load, so its decode GPUs are that
share of its GPUs, rounded up to whole GPUs (a decode pool too small to keep up would hold
every prefilled prompt's KV on the prefill nodes and stall them). The P:D GPU ratio is p / d.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from optimizer.capacity import TokenMix
from optimizer.topology import Node, Topology
from optimizer.topology_entries import GIB


@dataclass(frozen=True, slots=True)
class PhaseWork:
    """GPU-seconds per request of each phase on one accelerator, for one model."""

    accelerator: str
    prefill_gpu_s: float
    decode_gpu_s: float
    decode_batch: int

    @property
    def decode_share(self) -> float:
        """The share of a group's GPU time that decodes when both phases keep pace."""
        return self.decode_gpu_s / (self.prefill_gpu_s + self.decode_gpu_s)

    @property
    def pd_ratio(self) -> float:
        """Prefill GPUs per decode GPU when both phases keep pace."""
        return self.prefill_gpu_s / self.decode_gpu_s


@dataclass(frozen=True, slots=True)
class PoolSize:
    """One group of GPUs of one accelerator: how many of them should decode."""

    group: str
    accelerator: str
    gpus: int
    decode_gpus: int
    work: PhaseWork


def phase_work(topology: Topology, model: str, accelerator: str, mix: TokenMix) -> PhaseWork:
    """Prefill and decode GPU-seconds per request of `model` on one GPU of `accelerator`."""
    profile = topology.profile_by_key[(model, accelerator)]
    memory = topology.accelerator_by_name[accelerator].memory_gib
    weights = topology.model_by_name[model].memory_gib
    kv_bytes = topology.model_by_name[model].kv_bytes_per_token
    tokens = max(mix.prompt_tokens + mix.output_tokens, 1.0)
    fits = math.floor((memory - weights) * GIB / max(kv_bytes, 1) / tokens)
    batch = max(1, min(profile.max_batch, fits))
    step_s = (profile.decode_step_ms + profile.decode_step_ms_per_seq * batch) / 1000.0
    return PhaseWork(
        accelerator=accelerator,
        prefill_gpu_s=mix.prompt_tokens / profile.prefill_tokens_per_s,
        decode_gpu_s=mix.output_tokens * step_s / batch,
        decode_batch=batch,
    )


def by_jurisdiction(topology: Topology) -> Callable[[Node], str]:
    """Group nodes by their site's jurisdiction (a region whose requests stay within it)."""
    return lambda node: topology.site_by_name[node.site].jurisdiction or "-"


def size_pools(
    topology: Topology,
    model: str,
    mix: TokenMix,
    group: Callable[[Node], str] | None = None,
) -> list[PoolSize]:
    """Decode GPUs per (group, accelerator) of the active nodes serving `model`, DistServe's
    balance of the two phases' work; `group` defaults to the whole fleet as one group."""
    key = group or (lambda _node: "fleet")
    gpus: dict[tuple[str, str], int] = defaultdict(int)
    for node in topology.nodes:
        if node.state == "active" and model in node.models:
            gpus[(key(node), node.accelerator)] += node.gpus
    out = []
    for (name, accelerator), count in sorted(gpus.items()):
        work = phase_work(topology, model, accelerator, mix)
        decode = min(count, math.ceil(count * work.decode_share - 1e-9))
        out.append(PoolSize(name, accelerator, count, decode, work))
    return out


def sizing_table(pools: Sequence[PoolSize], mix: TokenMix) -> str:
    """Plain-text lines of the sizing, for the CLI and for citing in a topology's header."""
    lines = [
        f"mean prompt {mix.prompt_tokens:,.0f} tokens, mean output {mix.output_tokens:,.1f} tokens"
    ]
    for p in pools:
        w = p.work
        lines.append(
            f"{p.group} {p.accelerator}: {p.gpus} GPUs; prefill {w.prefill_gpu_s:.4f} GPU-s, "
            f"decode {w.decode_gpu_s:.4f} GPU-s per request (batch {w.decode_batch}); "
            f"P:D {w.pd_ratio:.2f}:1, decode share {w.decode_share:.2%} -> "
            f"{p.decode_gpus} decode GPUs, {p.gpus - p.decode_gpus} prefill-capable"
        )
    return "\n".join(lines)
