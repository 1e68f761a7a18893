"""The policies a server process has loaded: heuristics and trained scorers, by the rollout's
references, loaded on the refresh thread before a snapshot serves (`preload`) and handed to
the engine by `get` (the engine's `load_policy`)."""

from __future__ import annotations

import logging

from optimizer.decide.registry import is_learned, load_policy
from optimizer.decide.scorers.base import Policy
from optimizer.decide.scorers.learned import scorer_digest
from optimizer.decide.state.snapshot import PolicyRef, Snapshot

logger = logging.getLogger(__name__)


class LoadedPolicies:
    """Loaded policies. Heuristics are cached per topology (some, such as round-robin, hold
    state tied to the node list); trained scorers do not depend on it and are kept while the
    rollout uses them, so an inventory change never reloads one."""

    def __init__(self) -> None:
        self._loaded: dict[tuple[str, int], Policy] = {}
        # Policy keys that failed to load, so the warning is logged once, not every refresh.
        self.unloadable: set[str] = set()

    def get(self, ref: PolicyRef, snapshot: Snapshot) -> Policy:
        key = _policy_key(ref, snapshot)
        policy = self._loaded.get(key)
        if policy is None:
            if ref.sha256 and scorer_digest(ref.spec) != ref.sha256:
                # Never serve a file other than the one evaluated and approved.
                raise ValueError(f"{ref.spec}/scorer.pt changed since {ref.key} was registered")
            policy = load_policy(ref.spec, snapshot.topology, seed=0)
            self._loaded = {
                k: v for k, v in self._loaded.items() if k[1] in (0, id(snapshot.topology))
            }
            self._loaded[key] = policy
        return policy

    def preload(self, snapshot: Snapshot) -> None:
        """Load the rollout's policies before the snapshot serves, on the refresh thread:
        loading a TorchScript scorer takes far longer than a decision may. Trained scorers
        the rollout no longer uses are dropped. A policy that fails to load is left to the
        request path, whose scorer guard falls back and counts it."""
        rollout = snapshot.rollout
        refs = [r for r in (rollout.active, rollout.canary, rollout.shadow) if r is not None]
        in_use = {_policy_key(r, snapshot) for r in refs}
        self._loaded = {k: v for k, v in self._loaded.items() if k[1] != 0 or k in in_use}
        for ref in refs:
            try:
                self.get(ref, snapshot)
            except Exception as exc:
                if ref.key not in self.unloadable:  # once, not every refresh
                    logger.warning("cannot load policy %s (%s): %s", ref.key, ref.spec, exc)
                    self.unloadable.add(ref.key)
            else:
                self.unloadable.discard(ref.key)


def _policy_key(ref: PolicyRef, snapshot: Snapshot) -> tuple[str, int]:
    return (ref.key, 0 if is_learned(ref.spec) else id(snapshot.topology))
