"""What placement needs of exploration probes, declared here and supplied by `console.twin`
when the apps load (`TwinConfig.ready` connects its store), as `rollout.py` does for the
policies: the twin reads placement's decision records, so placement may not import the twin
(the `acyclic` contract, pyproject.toml). The engine's snapshot carries the running probe
(`optimizer.decide.state.snapshot.Probe`); the engine sends its share (docs/twin.md)."""

from __future__ import annotations

from typing import Protocol

from optimizer.decide.state.snapshot import Probe


class ProbeStore(Protocol):
    def running(self) -> Probe | None:
        """The running probe with budget left, or None."""
        ...


_store: ProbeStore | None = None


def connect(store: ProbeStore) -> None:
    """Make `store` the probes placement reads (called once, when the apps load)."""
    global _store
    _store = store


def running_probe() -> Probe | None:
    """The running probe; None when there is none, or no app provides probes (a console
    without the twin runs none)."""
    return None if _store is None else _store.running()
