"""Placement policies: the built-in heuristics by name, and trained scorers by directory.

`get_policy(name, topology, seed)` builds a heuristic; `load_policy(spec, topology, seed)` is
the one entry point for `--policy`, taking a built-in name or a directory written by `train`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optimizer.errors import InputFileError
from optimizer.policies.base import Policy, ordered
from optimizer.policies.routers import KvAwarePolicy, PrefixAwarePolicy, WeightedScorePolicy
from optimizer.policies.simple import (
    CostFirstPolicy,
    DataGravityPolicy,
    LatencyFirstPolicy,
    LeastLoadedPolicy,
    RandomPolicy,
    RoundRobinPolicy,
)
from optimizer.topology import Topology

_FACTORIES: dict[str, Callable[[Topology, int], Policy]] = {
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
POLICY_NAMES: tuple[str, ...] = tuple(_FACTORIES)
# The shipped learned policy, trained over many generated fleets (docs/learned-policy.md);
# a name wherever `--policy`/`--policies` take one, but not a heuristic.
GENERALIST = "generalist"
GENERALIST_DIR = Path(__file__).resolve().parent / "trained" / GENERALIST


def get_policy(name: str, topology: Topology, seed: int = 0) -> Policy:
    """A fresh built-in heuristic; raise KeyError naming the known ones for an unknown name."""
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise KeyError(
            f"unknown policy {name!r}; built-in policies: {', '.join(POLICY_NAMES)}"
        ) from None
    return factory(topology, seed)


def resolve_policy_dir(spec: str) -> Path:
    """The directory a trained-policy spec names: `generalist` is the shipped generalist."""
    return GENERALIST_DIR if spec == GENERALIST else Path(spec)


def load_policy(spec: str, topology: Topology, seed: int = 0) -> Policy:
    """The policy `--policy SPEC` names: a built-in heuristic, `generalist` (the shipped
    learned policy), or a directory from `train`."""
    if spec in _FACTORIES:
        return get_policy(spec, topology, seed)
    path = resolve_policy_dir(spec)
    if path.is_dir():
        scorer = path / "scorer.pt"
        if not scorer.is_file():
            raise InputFileError(str(path), [f"no scorer.pt in {path}"])
        # Imported here so the heuristics never pay for importing torch.
        from optimizer.rl.export import load_trained_policy

        return load_trained_policy(path)
    raise InputFileError(
        spec,
        [
            f"unknown policy {spec!r}: not a built-in ({', '.join(POLICY_NAMES)}) "
            "nor a directory written by train"
        ],
    )


DECISION_COST_WEIGHT = "decision_cost_weight"
# Far above any useful value (0.5 was chosen for the generalist; 2 already cost it a point of
# attainment on validation), and small enough that the score stays finite for any estimate.
MAX_DECISION_COST_WEIGHT = 1000.0


def decision_cost_weight(meta: dict[str, Any]) -> float:
    """policy.json's `decision_cost_weight` (0 when absent): how many logits of the scorer one
    USD per 1k requests of a candidate's estimated cost is worth at decision time
    (`optimizer.rl.export.TrainedPolicy`). Raises ValueError naming the problem."""
    value = meta.get(DECISION_COST_WEIGHT, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{DECISION_COST_WEIGHT} must be a number, got {value!r}")
    if not math.isfinite(value) or not 0.0 <= value <= MAX_DECISION_COST_WEIGHT:
        raise ValueError(
            f"{DECISION_COST_WEIGHT} must be within 0..{MAX_DECISION_COST_WEIGHT:g}, got {value!r}"
        )
    return float(value)


def scorer_digest(directory: str | Path) -> str:
    """SHA-256 of a trained policy directory's decision rule ("" when scorer.pt cannot be
    read): scorer.pt, and policy.json's `decision_cost_weight` when it sets one, since that
    changes the decisions too. What a registered version records, and what serving checks
    before loading it. (Without a cost weight it is scorer.pt's own SHA-256, as before.)"""
    sha = hashlib.sha256()
    try:
        with (Path(directory) / "scorer.pt").open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                sha.update(chunk)
    except OSError:
        return ""
    try:
        meta = json.loads((Path(directory) / "policy.json").read_text(encoding="utf-8"))
        weight = meta.get(DECISION_COST_WEIGHT) if isinstance(meta, dict) else None
    except (OSError, ValueError):
        weight = None  # the loader refuses such a directory with the reason
    if weight:
        sha.update(f"\0{DECISION_COST_WEIGHT}={weight!r}".encode())
    return sha.hexdigest()


__all__ = ["POLICY_NAMES", "Policy", "get_policy", "load_policy", "ordered", "scorer_digest"]
