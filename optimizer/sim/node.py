"""One serving node in the simulator, in time: when its prefills and decode runs start and end.

The node is a vLLM-style engine without chunked prefill: at each scheduling point it prefills
the head of its queue if the head can be admitted (`optimizer.sim.occupancy`: a batch slot for
its model and KV room for its whole sequence), one request at a time, stalling decode;
otherwise it runs decode rounds. A round advances every running sequence by one token and
takes, per model in the batch, `decode_step_ms + decode_step_ms_per_seq * batch` (models on
one node take turns, so a single-model node has exactly the docs/contracts.md §1 step).
Between scheduling points the batch is fixed, so the node jumps straight to the round where
the next sequence finishes; an arrival that could be admitted cuts the run at the end of the
round in progress.

With chunked prefill (`chunk`, `optimizer.sim.interference`) a prefill beside decoding sequences
runs as steps that carry a chunk of it and one round of the batch; its run is planned up to
the step where the next sequence finishes, then planned again, so runs stay whole jumps.

Split requests (issue #30): on its prefill node a split request is handed off once prefilled
(`handoff`, the engine's) instead of decoding, and its KV is freed when the engine says the
transfer is done (`release`). On its decode node it arrives prefilled: its admission takes no
prefill time and its first token comes at admission.

What the node holds (queue, KV reservations, cache pins, the state policies read) is its
base class's, `optimizer.sim.occupancy.NodeOccupancy`; this module keeps the clock, the
run in progress and the dollar shares its steps charge.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from math import ceil

import numpy as np

from optimizer.decide.state.fleet import (
    S_PREFILL_RATE,
    S_STEP_MS,
    S_STEP_MS_PER_SEQ,
    S_USD_PER_HOUR,
    Fleet,
)
from optimizer.decide.state.prefix import PrefixCache
from optimizer.sim.interference import chunk_run
from optimizer.sim.occupancy import NodeOccupancy
from optimizer.sim.requests import RequestTable

IDLE, PREFILL, DECODE = 0, 1, 2


class SimNode(NodeOccupancy):
    """The simulated state of one node: what it holds (`NodeOccupancy`) and the prefill or
    decode run it is in, woken by the engine when a planned run ends."""

    __slots__ = (
        "usd_per_s",
        "decoding",
        "rounds",
        "phase",
        "phase_start",
        "round_s",
        "planned",
        "current",
        "version",
        "busy_s",
        "share",
        "prefill_rate",
        "step_s",
        "per_seq_s",
        "_wake",
        "_handoff",
        "chunk",
        "left",
        "steps",
        "run_tokens",
        "fill",
    )

    def __init__(
        self,
        index: int,
        fleet: Fleet,
        dynamic: np.ndarray,
        cache: PrefixCache,
        table: RequestTable,
        wake: Callable[[float, int, int], None],
        handoff: Callable[[int, int, float], None] | None = None,
        chunk: int | None = None,
    ) -> None:
        """Node `index` of `fleet`; `dynamic` is the fleet's dynamic columns, written by
        `sync`; `cache` its prefix cache (of the simulator's `PrefixIndex`); `wake(at, node,
        version)` asks the engine to call `wake` at `at` unless `version` has moved on;
        `handoff(rid, node, now)`: a split request's prefill ended here (None: no split is
        ever sent); `chunk`: the token budget of a step with chunked prefill (None: a prefill
        runs alone)."""
        self._wake = wake
        self._handoff = handoff
        self.chunk = chunk
        self.busy_s = 0.0
        self.version = 0
        super().__init__(index, fleet, dynamic, cache, table)
        rows = {m: fleet.static[m][index].tolist() for m in self.models}
        self.usd_per_s = float(fleet.static[0][index][S_USD_PER_HOUR]) / 3600.0
        self.prefill_rate = {m: r[S_PREFILL_RATE] for m, r in rows.items()}
        self.step_s = {m: r[S_STEP_MS] / 1000.0 for m, r in rows.items()}
        self.per_seq_s = {m: r[S_STEP_MS_PER_SEQ] / 1000.0 for m, r in rows.items()}

    def _reset(self) -> None:
        super()._reset()
        self.decoding: list[tuple[int, int]] = []  # (finish round, request) heap
        self.rounds = 0
        self.phase = IDLE
        self.phase_start = 0.0
        self.round_s = 0.0
        self.planned = 0
        self.current = -1
        self.left = 0.0  # the current prefill's tokens still to compute
        self.steps = 0  # decode rounds the planned prefill run carries (chunked prefill)
        self.run_tokens = 0.0  # prefill tokens the planned run computes
        self.fill = 0.0  # prefill tokens in the step still open (chunked prefill)
        # Running dollar share per sequence of each model since the start (docs/contracts.md §1: a
        # sequence pays 1/batch of each step it takes part in); a sequence pays the difference
        # between its finish and its start.
        self.share = {m: 0.0 for m in self.models}

    # -- arrivals ----------------------------------------------------------------------------
    def arrive(self, rid: int, now: float) -> None:
        """A request placed here reached the node and joins the queue."""
        self.in_flight -= 1
        self.waiting.append(rid)
        if self.phase == IDLE:
            self.schedule(now)
        elif self.phase == DECODE and len(self.waiting) == 1 and self._admissible(rid):
            # Prefill has priority: stop the decode run at the end of the round in progress.
            self._cut(now)
        self.sync()

    def _cut(self, now: float) -> None:
        """End a decode run in progress with its round in progress (the emulator's
        `EmulatedNode.cancel` cuts one too, when its batch or its queue head changes)."""
        if self.phase != DECODE:
            return
        # Rounds begun by now (none when the run starts this very instant).
        done = max(0, ceil((now - self.phase_start) / self.round_s - 1e-9))
        if done < self.planned:
            self.planned = done
            self.version += 1
            self._wake(self.phase_start + done * self.round_s, self.index, self.version)

    # -- the engine loop -----------------------------------------------------------------------
    def schedule(self, now: float) -> None:
        """At a scheduling point: prefill the queue head if admissible, else decode, else idle."""
        if self.waiting and self._admissible(self.waiting[0]):
            self._start_prefill(self.waiting.popleft(), now)
        elif self.decoding:
            self.fill = 0.0  # the run's first round closes a step a prefill left open
            self.round_s = sum(
                self.step_s[m] + self.per_seq_s[m] * b for m, b in self.batch.items() if b
            )
            self.planned = self.decoding[0][0] - self.rounds
            self.phase, self.phase_start = DECODE, now
            self.version += 1
            self._wake(now + self.planned * self.round_s, self.index, self.version)
        else:
            self.fill = 0.0
            self.phase = IDLE

    def _start_prefill(self, rid: int, now: float) -> None:
        self.left = self._admit(rid)
        self.current = rid
        self._plan_prefill(now)

    def _plan_prefill(self, now: float) -> None:
        """Plan the current prefill's next run: all of it at once, or, with chunked prefill
        beside decoding sequences, up to its end or to the step where the next sequence
        finishes (`optimizer.sim.interference`). A step closes, with a decode round, every
        `chunk - batch` prefill tokens; a prefill that ends inside a step leaves it open
        (`fill` tokens) for the next prefill to fill, as vLLM packs several prompts into one
        step's budget, and a decode run's first round closes it otherwise."""
        m = self._table.model[self.current]
        rate = self.prefill_rate[m]
        batch = sum(self.batch.values()) if self.chunk is not None and self.left else 0
        if batch:
            assert self.chunk is not None
            # Steps until the next sequence finishes end the run, or the prefill's end does.
            due = self.decoding[0][0] - self.rounds
            self.steps, self.run_tokens, self.fill = chunk_run(
                self.left, self.fill, self.chunk - batch, due
            )
            self.round_s = sum(
                self.step_s[k] + self.per_seq_s[k] * b for k, b in self.batch.items() if b
            )
            duration = self.run_tokens / rate + self.steps * self.round_s
        else:
            if self.left:
                self.fill = 0.0  # nothing decodes: no step is open
            self.steps, self.run_tokens = 0, self.left
            duration = self.left / rate
        self._table.cost[self.current] += self.usd_per_s * (self.run_tokens / rate)
        self.phase, self.phase_start = PREFILL, now
        self.version += 1
        self._wake(now + duration, self.index, self.version)

    def wake(self, now: float) -> None:
        """The planned prefill or decode run ended: account for it, then schedule on."""
        t = self._table
        if self.phase == PREFILL:
            self.busy_s += now - self.phase_start
            if self.steps:  # the run's steps carried decode rounds too
                self._rounds_done(self.steps, now)
            self.left -= self.run_tokens
            if self.left > 0:
                self._plan_prefill(now)
                self.sync()
                return
            rid = self.current
            self.current = -1
            self._cache_prompt(rid)
            if t.prefill_node[rid] == self.index:  # split: its decode node takes it on
                self.handing.add(rid)
                assert self._handoff is not None
                self._handoff(rid, self.index, now)
            else:
                t.first_token(rid, now)
                if t.output[rid] <= 1:
                    self._finish(rid, now)
                else:
                    m = t.model[rid]
                    heapq.heappush(self.decoding, (self.rounds + t.output[rid] - 1, rid))
                    self.batch[m] += 1
                    t.share_start[rid] = self.share[m]
        elif self.phase == DECODE:
            self.busy_s += self.planned * self.round_s
            self._rounds_done(self.planned, now)
        self.schedule(now)
        self.sync()

    def _rounds_done(self, k: int, now: float) -> None:
        """`k` decode rounds of the current batch ended at `now`: their cost shares, and the
        sequences they finished."""
        t = self._table
        self.rounds += k
        for m, b in self.batch.items():
            if b:
                self.share[m] += k * self.usd_per_s * (self.step_s[m] + self.per_seq_s[m] * b) / b
        decoding = self.decoding
        while decoding and decoding[0][0] <= self.rounds:
            rid = heapq.heappop(decoding)[1]
            m = t.model[rid]
            self.batch[m] -= 1
            t.cost[rid] += self.share[m] - t.share_start[rid]
            self._finish(rid, now)

    def release(self, rid: int, now: float) -> None:
        """A split request's KV reached its decode node: free its prompt's KV here (its blocks
        stay cached while room lasts) and, when idle, schedule on (a decode run in progress
        is not cut short for the queue head this may let in: it is admitted at the run's end)."""
        self.handing.discard(rid)
        self._unreserve(rid, self._table.kv_prompt[rid])
        if self.phase == IDLE:
            self.schedule(now)
        self.sync()

    def _finish(self, rid: int, now: float) -> None:
        self._unreserve(rid, self._table.kv_need[rid])
        self._table.finish(rid, now)

    # -- operations ------------------------------------------------------------------------------
    def fail(self, now: float) -> list[int]:
        """Go down: running sequences are lost, and so are split requests whose KV is still
        crossing to their decode node (the rest of it was in this node's memory; before, they
        were dropped at their KV's arrival and left pending, issue #30); the cache is gone;
        returns the queued requests for the engine to place again."""
        if self.phase != IDLE:
            self.busy_s += now - self.phase_start
        lost = [rid for _, rid in self.decoding]
        if self.current >= 0:
            lost.append(self.current)
        lost.extend(sorted(self.handing))  # their arrival finds them gone (`KvTransfers.arrived`)
        for rid in lost:
            self._table.fail(rid)
        self.version += 1  # the run in progress never ends
        return self._go_down()
