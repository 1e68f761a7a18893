"""A shared view of the fleet for several deciders (issue #29): what one decider tells the
others about its sends, and how a decider merges theirs into its `LiveState`.

Each decider (a web worker, a `run_picker` or `run_router` process, on any host) keeps its
own `LiveState` and decides from it alone, in memory. Beside that it publishes every send
(node, model, prompt block hashes, when, and whether it is a split's decode half), and merges
the other deciders' sends into its state as they arrive (`merge`): their prompt blocks join
the node's approximate prefix cache (an LRU within the node's KV room, as its own do), and
each counts as queued on its node until a sample measured after it arrives, exactly as its
own sends count (`LiveState.observe`; a decode half counts as running, not queued). A send
that arrives after a sample that covers it adds its blocks only.

The wire format: a batch is a JSON list of rows `[node, model, at, hashes]`, with a fifth
element `1` on a split's decode half (issue #30). `decode` reads both lengths, so rows from a
decider that predates the phase still merge (as whole requests). A row of five elements is
only written for a decode half, so an older receiver, which reads four, stays in step with
every batch that holds no split.

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
    decode_only: bool = False  # a split's decode half (`LiveState.sent`)


def encode(sends: Iterable[Send]) -> bytes:
    """A batch of sends as compact JSON (one message per batch, not per send)."""
    rows: list[list[object]] = []
    for s in sends:
        row: list[object] = [s.node, s.model, round(s.at, 6), list(s.hashes)]
        if s.decode_only:
            row.append(1)
        rows.append(row)
    return json.dumps(rows, separators=(",", ":")).encode()


def decode(payload: bytes | str) -> list[Send]:
    """The sends of one `encode`d batch, rows of four elements (a whole request, as every
    row was before the phase) or five (the last one the decode-half flag); raise ValueError
    on anything else."""
    try:
        rows = json.loads(payload)
        if not isinstance(rows, list):
            raise TypeError("a batch is a list")
        sends = []
        for row in rows:
            if not isinstance(row, list) or len(row) not in (4, 5):
                raise TypeError("a send is a row of 4 or 5 elements")
            n, m, at, hs = row[:4]
            decode_only = len(row) == 5 and bool(int(row[4]))
            sends.append(Send(str(n), str(m), tuple(int(h) for h in hs), float(at), decode_only))
        return sends
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
        live.sent_by_peer(node, model, send.hashes, send.at, decode_only=send.decode_only)
        merged += 1
    return merged
