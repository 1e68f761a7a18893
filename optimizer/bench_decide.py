"""`python -m optimizer bench-decide`: decision latency of the kernel beside the per-node
reference, in one process, one thread, on the same states (docs/decision-kernel.md).

For N in 8, 64, 256 and 1,000 candidates, the topology's nodes that may serve its first
source's requests are replicated (names suffixed `~k`) into a fleet of exactly N such nodes,
each given a random load and a quarter of them a cached prefix of the request. One decision
is what the engine does per request:
- kernel: the decision pipeline (`optimizer.decide.pipeline`) with the constraints filter: the
  hard constraints, the candidate columns, the policy's `score` (the learned scorer through its
  numpy twin) and the pick with its 3 fallbacks (the top-k picker);
- reference: `filter_candidates` over prebuilt `NodeView`s, the per-node policy's `scores`
  (the learned scorer: `candidate_rows` then TorchScript) and `ordered`'s first 4 (view
  building is not timed, which flatters the reference).
With `splitter` (`--split NAME`) a third path, `split`, is the kernel's pipeline ending with
that split stage, deciding a long prompt (`SPLIT_PROMPT_TOKENS`) on the same fleet and state;
its figures say whether that decision split (on a fleet with prefill/decode pools, such as
`pd-two-regions.yaml`, whose roles the copies keep; issue #30).
Timings are p50 and p99 in microseconds over `repeats` decisions after a warm-up, of wall
time, or with `cpu_time` of the process's CPU time (which leaves out the time the process
waited for a core: on a shared machine, what the code itself costs).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from optimizer.constraints import filter_candidates
from optimizer.decide.pipeline import Pipeline
from optimizer.decide.registry import (
    POLICY_NAMES,
    get_filter,
    get_policy,
    get_splitter,
    load_policy,
)
from optimizer.decide.request import PlacementRequest, placement_request
from optimizer.decide.scorers.base import Policy, ordered
from optimizer.decide.scorers.learned import TrainedPolicy
from optimizer.decide.state.fleet import DYNAMIC_COLUMNS, Fleet
from optimizer.decide.state.prefix import PrefixIndex
from optimizer.decision import NodeView, node_view
from optimizer.features import candidate_rows
from optimizer.reference.policies import reference_policy
from optimizer.topology import Topology

SIZES: tuple[int, ...] = (8, 64, 256, 1000)
FALLBACKS = 3
HASHES = (11, 12, 13, 14)
# The split path's prompt: past the split stage's default threshold with its first
# `len(HASHES)` blocks cached at most, as a long prompt of the Mooncake trace would be.
SPLIT_PROMPT_TOKENS = 8000


def _fleet_of(topology: Topology, n: int) -> tuple[Topology, PlacementRequest]:
    """`topology` with exactly `n` nodes, copies of the ones that may serve the request."""
    source = topology.sources[0] if topology.sources else None
    site = source.site if source else topology.sites[0].name
    model = topology.models[0].name
    probe = placement_request(
        topology,
        model=model,
        source_site=site,
        slo=source.slo if source else None,
        prompt_tokens=2000,
        max_output_tokens=200,
        prefix_hashes=HASHES,
        source=source.name if source else None,
    )
    views = [node_view(topology, node.name, model) for node in topology.nodes]
    able, _ = filter_candidates(probe, views, topology)
    if not able:
        raise ValueError("no node of the topology may serve its first source's requests")
    nodes = [
        topology.node_by_name[able[i % len(able)].name].model_copy(
            # Copies have no endpoint address: one address names one node.
            update={"name": f"{able[i % len(able)].name}~{i}", "state": "active", "address": None}
        )
        for i in range(n)
    ]
    copy = topology.model_validate(
        {**topology.model_dump(), "nodes": [m.model_dump() for m in nodes]}
    )
    return copy, probe


def _state(fleet: Fleet, model: int, rng: np.random.Generator) -> tuple[np.ndarray, PrefixIndex]:
    static = fleet.static[model]
    dynamic = np.zeros((fleet.size, DYNAMIC_COLUMNS), dtype=np.float64)
    dynamic[:, 0] = rng.integers(0, 20, fleet.size)
    dynamic[:, 1] = np.floor(rng.uniform(0, 1, fleet.size) * (static[:, 3] + 1))
    dynamic[:, 2] = np.floor(rng.uniform(0, 0.9, fleet.size) * static[:, 2])
    prefix = PrefixIndex(fleet.size)
    block = 512 * fleet.kv_per_token[model]
    for i in np.flatnonzero(rng.random(fleet.size) < 0.25).tolist():
        depth = int(rng.integers(1, len(HASHES) + 1))
        prefix.cache_of(i).insert(model, HASHES[:depth], block, 1 << 40)
    return dynamic, prefix


def _views(
    fleet: Fleet, model: str, dynamic: np.ndarray, prefix: PrefixIndex, m: int
) -> list[NodeView]:
    views = []
    for i, name in enumerate(fleet.names):
        cache = prefix.caches[i]
        views.append(
            node_view(
                fleet.topology,
                name,
                model,
                queue_depth=int(dynamic[i, 0]),
                running=int(dynamic[i, 1]),
                kv_used_bytes=int(dynamic[i, 2]),
                prefix_blocks=cache.match(m, HASHES) if cache is not None else 0,
            )
        )
    return views


def _time(decide: Callable[[], object], repeats: int, cpu_time: bool) -> dict[str, float]:
    for _ in range(max(20, repeats // 10)):
        decide()
    samples = np.empty(repeats)
    clock = time.process_time_ns if cpu_time else time.perf_counter_ns
    for i in range(repeats):
        start = clock()
        decide()
        samples[i] = clock() - start
    p50, p99 = np.percentile(samples / 1000.0, [50, 99])
    return {"p50_us": round(float(p50), 1), "p99_us": round(float(p99), 1)}


def benchmark(
    topology: Topology,
    policy_dir: str | Path | None,
    repeats: int = 300,
    seed: int = 0,
    cpu_time: bool = False,
    splitter: str | None = None,
) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """`{"kernel"|"reference"[|"split"]: {POLICY: {"N": {"p50_us", "p99_us"[, "split"]}}}}`."""
    learned = None
    if policy_dir is not None:
        torch.set_num_threads(1)
        learned = load_policy(str(policy_dir), topology, seed)
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {"kernel": {}, "reference": {}}
    if splitter is not None:
        out["split"] = {}
    rng = np.random.default_rng(seed)
    for n in SIZES:
        fleet_topology, request = _fleet_of(topology, n)
        fleet = Fleet(fleet_topology)
        m = fleet.model_index[request.model]
        dynamic, prefix = _state(fleet, m, rng)
        views = _views(fleet, request.model, dynamic, prefix, m)
        names: list[str] = list(POLICY_NAMES)
        if learned is not None:
            names.append(learned.name)
        for name in names:
            if learned is not None and name == learned.name:
                policy: Policy = learned
            else:
                policy = get_policy(name, fleet_topology, seed)
            kernel = _kernel(fleet, request, dynamic, prefix, policy)
            reference = _reference(name, policy, fleet_topology, request, views, seed)
            out["kernel"].setdefault(name, {})[str(n)] = _time(kernel, repeats, cpu_time)
            out["reference"].setdefault(name, {})[str(n)] = _time(reference, repeats, cpu_time)
            if splitter is not None:
                long = dataclasses.replace(request, prompt_tokens=SPLIT_PROMPT_TOKENS)
                split, did = _split(fleet, long, dynamic, prefix, policy, splitter)
                timed: dict[str, Any] = dict(_time(split, repeats, cpu_time))
                out["split"].setdefault(name, {})[str(n)] = {**timed, "split": did}
    return out


def _split(
    fleet: Fleet,
    request: PlacementRequest,
    dynamic: np.ndarray,
    prefix: PrefixIndex,
    policy: Policy,
    splitter: str,
) -> tuple[Callable[[], object], bool]:
    """The split path's decision, and whether it splits on this state."""
    pipeline = Pipeline([get_filter("constraints")], splitter=get_splitter(splitter))

    def decide() -> object:
        return pipeline.decide(fleet, request, dynamic, prefix, policy, 1 + FALLBACKS).pairs

    return decide, pipeline.decide(fleet, request, dynamic, prefix, policy, 1).split


def _kernel(
    fleet: Fleet,
    request: PlacementRequest,
    dynamic: np.ndarray,
    prefix: PrefixIndex,
    policy: Policy,
) -> Callable[[], object]:
    pipeline = Pipeline([get_filter("constraints")])

    def decide() -> object:
        return pipeline.decide(fleet, request, dynamic, prefix, policy, 1 + FALLBACKS).order

    return decide


def _reference(
    name: str,
    policy: Policy,
    topology: Topology,
    request: PlacementRequest,
    views: list[NodeView],
    seed: int,
) -> Callable[[], object]:
    if name in POLICY_NAMES:
        oracle = reference_policy(name, topology, seed)

        def decide() -> object:
            candidates, _ = filter_candidates(request, views, topology)
            return ordered(oracle.scores(request, candidates, topology))[: 1 + FALLBACKS]

        return decide
    assert isinstance(policy, TrainedPolicy)

    def decide_learned() -> object:
        candidates, _ = filter_candidates(request, views, topology)
        rows = candidate_rows(request, candidates, topology)
        return ordered(policy.score_rows_torch(rows))[: 1 + FALLBACKS]

    return decide_learned


def format_table(result: dict[str, Any], cpu_time: bool = False) -> str:
    lines = [
        f"{'policy':<22}{'N':>6}{'kernel p50':>12}{'p99':>9}{'reference p50':>15}{'p99':>9}"
        f"{'p50 ratio':>11}"
    ]
    for name, sizes in result["kernel"].items():
        for n, k in sizes.items():
            r = result["reference"][name][n]
            lines.append(
                f"{name:<22}{n:>6}{k['p50_us']:>12.1f}{k['p99_us']:>9.1f}"
                f"{r['p50_us']:>15.1f}{r['p99_us']:>9.1f}{r['p50_us'] / k['p50_us']:>10.1f}x"
            )
    for name, sizes in result.get("split", {}).items():
        for n, k in sizes.items():
            lines.append(
                f"{name + ' (split)':<22}{n:>6}{k['p50_us']:>12.1f}{k['p99_us']:>9.1f}"
                f"{'split' if k['split'] else 'one node':>15}"
            )
    clock = "CPU time" if cpu_time else "wall time"
    return "\n".join(lines) + f"\n(µs of {clock} per decision, 1 thread, in-process)"
