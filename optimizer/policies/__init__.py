"""Placement policies: the built-in heuristics by name, and trained scorers by directory.

`get_policy(name, topology, seed)` builds a heuristic; `load_policy(spec, topology, seed)` is
the one entry point for `--policy`, taking a built-in name or a directory written by `train`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

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


def scorer_digest(directory: str | Path) -> str:
    """SHA-256 of a trained policy directory's scorer.pt ("" when it cannot be read): what a
    registered version records, and what serving checks before loading it."""
    sha = hashlib.sha256()
    try:
        with (Path(directory) / "scorer.pt").open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                sha.update(chunk)
    except OSError:
        return ""
    return sha.hexdigest()


__all__ = ["POLICY_NAMES", "Policy", "get_policy", "load_policy", "ordered", "scorer_digest"]
