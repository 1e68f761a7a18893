"""A shared view of the fleet for several deciders (issue #29): what one decider tells the
others about its sends, and how a decider merges theirs into its `LiveState`.

Each decider (a web worker, a `run_picker` or `run_router` process, on any host) keeps its
own `LiveState` and decides from it alone, in memory. Beside that it publishes every send,
(node, model, prompt block hashes, when), and merges the other deciders' sends into its
state as they arrive (`merge`): their prompt blocks join the node's approximate prefix cache
(an LRU within the node's KV room, as its own do), and each counts as queued on its node until
a sample measured after it arrives, exactly as its own sends count (`LiveState.observe`). A
send that arrives after a sample that covers it adds its blocks only.

So K deciders with a shared view hold what one decider would, minus the publish-to-merge
delay; the simulator's `--deciders K --shared-view` (`optimizer.sim.deciders`) replays that
model without the delay. The transport (Redis in the console,
`console.placement.engine.sharedview`) is not this module's concern: it moves encoded batches.

Like SGLang's gateway mesh, which shares cache-aware routing state as operations ("insert
this text for this worker", sgl-router/src/mesh/tree_ops.rs) rather than whole trees, what
travels is the operation, and each receiver applies it to its own bounded structure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from optimizer.decide.state.live import LiveState


@dataclass(frozen=True, slots=True)
class Send:
    """One placed request as another decider learns it. Names, not indexes: deciders may
    hold their fleets' nodes in different orders while an inventory change propagates."""

    node: str
    model: str
    hashes: tuple[int, ...]
    at: float  # seconds since the epoch, the clock telemetry samples are measured on


def encode(sends: Iterable[Send]) -> bytes:
    """A batch of sends as compact JSON (one message per batch, not per send)."""
    rows = [[s.node, s.model, round(s.at, 6), list(s.hashes)] for s in sends]
    return json.dumps(rows, separators=(",", ":")).encode()


def decode(payload: bytes | str) -> list[Send]:
    """The sends of one `encode`d batch; raise ValueError on anything else."""
    try:
        rows = json.loads(payload)
        if not isinstance(rows, list):
            raise TypeError("a batch is a list")
        return [Send(str(n), str(m), tuple(int(h) for h in hs), float(at)) for n, m, at, hs in rows]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not a batch of sends: {exc}") from exc


def merge(live: LiveState, sends: Iterable[Send]) -> int:
    """Apply other deciders' sends to `live`; return how many named a node and model this
    fleet has (the others, from a fleet that changed meanwhile, are skipped)."""
    index_of, model_index = live.fleet.index_of, live.fleet.model_index
    merged = 0
    for send in sends:
        node, model = index_of.get(send.node), model_index.get(send.model)
        if node is None or model is None:
            continue
        live.sent_by_peer(node, model, send.hashes, send.at)
        merged += 1
    return merged
