"""Every decision plugin by name: filters, scorers and pickers, each name -> its factory.

As the GIE EPP registers its plugins by type name (pkg/epp/plugins/registry.go) so a config
file can name them, `--policy`/`--policies`, the console's settings and the benches name a
scorer here, and a pipeline is assembled from filter names. Adding a plugin is its file plus
one line below (docs/architecture.md, "How to add a filter or a scorer").

`load_policy(spec, topology, seed)` is the one entry point for `--policy`: a built-in name,
`generalist` (the shipped learned policy) or a directory written by `train`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from optimizer.decide.filters.among import AmongFilter
from optimizer.decide.filters.breakers import BreakerFilter
from optimizer.decide.filters.constraints import ConstraintsFilter
from optimizer.decide.filters.min_free_kv import MinFreeKvFilter
from optimizer.decide.filters.stale import StaleTelemetryFilter
from optimizer.decide.framework import Filter, Picker, Splitter
from optimizer.decide.pickers.split import ThresholdSplitter
from optimizer.decide.pickers.top_k import TopKPicker
from optimizer.decide.scorers.base import Policy
from optimizer.decide.scorers.cost_first import CostFirstPolicy
from optimizer.decide.scorers.data_gravity import DataGravityPolicy
from optimizer.decide.scorers.kv_aware import KvAwarePolicy
from optimizer.decide.scorers.latency_first import LatencyFirstPolicy
from optimizer.decide.scorers.learned import SCORER_FILE, load_trained_policy
from optimizer.decide.scorers.least_loaded import LeastLoadedPolicy
from optimizer.decide.scorers.prefix_aware import PrefixAwarePolicy
from optimizer.decide.scorers.random import RandomPolicy
from optimizer.decide.scorers.round_robin import RoundRobinPolicy
from optimizer.decide.scorers.weighted_score import WeightedScorePolicy
from optimizer.errors import InputFileError
from optimizer.topology import Topology

# Filters by name, each factory taking its own keyword settings. The constraints come first
# in every pipeline (`optimizer.decide.pipeline`); the others narrow what they leave.
FILTERS: dict[str, Callable[..., Filter]] = {
    "constraints": ConstraintsFilter,
    "among": AmongFilter,
    "breakers": BreakerFilter,
    "stale-telemetry": StaleTelemetryFilter,
    "min-free-kv": MinFreeKvFilter,
}
# Scorers (the built-in heuristics) by name: factory(topology, seed).
SCORERS: dict[str, Callable[[Topology, int], Policy]] = {
    "random": lambda topology, seed: RandomPolicy(seed),
    "round-robin": lambda topology, seed: RoundRobinPolicy(topology),
    "least-loaded": lambda topology, seed: LeastLoadedPolicy(),
    "latency-first": lambda topology, seed: LatencyFirstPolicy(),
    "cost-first": lambda topology, seed: CostFirstPolicy(),
    "data-gravity": lambda topology, seed: DataGravityPolicy(),
    "weighted-score": lambda topology, seed: WeightedScorePolicy(),
    "prefix-aware": lambda topology, seed: PrefixAwarePolicy(),
    "kv-aware": lambda topology, seed: KvAwarePolicy(),
}
PICKERS: dict[str, Callable[[], Picker]] = {
    "top-k": TopKPicker,
}
# Split stages by name, each factory taking its own keyword settings (`threshold_tokens`):
# the pipeline's last stage, which may pair a prefill node with the decode node (issue #30).
SPLITTERS: dict[str, Callable[..., Splitter]] = {
    "pd-threshold": ThresholdSplitter,
    "pd-threshold-blind": lambda **settings: ThresholdSplitter(**settings, bandwidth_aware=False),
}
POLICY_NAMES: tuple[str, ...] = tuple(SCORERS)
# The shipped learned policy, trained over many generated fleets (docs/learned-policy.md);
# a name wherever `--policy`/`--policies` take one, but not a heuristic.
GENERALIST = "generalist"
TRAINED_DIR = Path(__file__).resolve().parent.parent / "trained"
GENERALIST_DIR = TRAINED_DIR / GENERALIST


def _lookup(kind: str, table: dict[str, Any], name: str) -> Any:
    try:
        return table[name]
    except KeyError:
        plural = "policies" if kind == "policy" else f"{kind}s"
        raise KeyError(f"unknown {kind} {name!r}; built-in {plural}: {', '.join(table)}") from None


def get_filter(name: str, **settings: Any) -> Filter:
    """A filter by name, built with its settings; KeyError naming the known ones."""
    factory: Callable[..., Filter] = _lookup("filter", FILTERS, name)
    return factory(**settings)


def get_picker(name: str) -> Picker:
    """A picker by name; KeyError naming the known ones."""
    factory: Callable[[], Picker] = _lookup("picker", PICKERS, name)
    return factory()


def get_splitter(name: str, **settings: Any) -> Splitter:
    """A split stage by name, built with its settings; KeyError naming the known ones."""
    factory: Callable[..., Splitter] = _lookup("split stage", SPLITTERS, name)
    return factory(**settings)


def get_policy(name: str, topology: Topology, seed: int = 0) -> Policy:
    """A fresh built-in heuristic; raise KeyError naming the known ones for an unknown name."""
    factory: Callable[[Topology, int], Policy] = _lookup("policy", SCORERS, name)
    return factory(topology, seed)


def is_learned(spec: str) -> bool:
    """Whether a policy spec names a trained scorer (a directory), not a built-in heuristic."""
    return spec not in SCORERS


def resolve_policy_dir(spec: str) -> Path:
    """The directory a trained-policy spec names: `generalist` is the shipped generalist."""
    return GENERALIST_DIR if spec == GENERALIST else Path(spec)


def load_policy(spec: str, topology: Topology, seed: int = 0) -> Policy:
    """The policy `--policy SPEC` names: a built-in heuristic, `generalist` (the shipped
    learned policy), or a directory from `train`."""
    if spec in SCORERS:
        return get_policy(spec, topology, seed)
    path = resolve_policy_dir(spec)
    if path.is_dir():
        if not (path / SCORER_FILE).is_file():
            raise InputFileError(str(path), [f"no {SCORER_FILE} in {path}"])
        return load_trained_policy(path)
    raise InputFileError(
        spec,
        [
            f"unknown policy {spec!r}: not a built-in ({', '.join(POLICY_NAMES)}) "
            "nor a directory written by train"
        ],
    )
