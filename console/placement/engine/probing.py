"""The engine's side of an exploration probe (docs/twin.md, "Exploration probe"): which
decisions it takes and how many it has sent. The choice of node is the pure picker's
(`optimizer.decide.pickers.probe`); this keeps the budget.

The budget is counted twice, because records reach the database in batches
(`recorder.py`): the snapshot's `Probe.remaining` is the budget less the probe decisions the
database held when the snapshot was built, and this process counts what it sent since; it
also never sends more than the whole budget itself. One process therefore stops exactly at
the budget. Several processes each stop within what they sent since their last refresh
(`LOCUS_SNAPSHOT_REFRESH_SECONDS`), so the overshoot is bounded by one refresh interval of
probe traffic a process; the twin's probe check then records the probe complete and the
next snapshots no longer carry it.
"""

from __future__ import annotations

import threading
from typing import Any

from optimizer.decide.pickers.probe import in_probe, probe_order, probe_pick
from optimizer.decide.pipeline import Choice
from optimizer.decide.state.snapshot import Probe


class ProbeArm:
    """Takes a running probe's share of decisions, within its budget. Called under the
    engine's lock."""

    def __init__(self) -> None:
        self._sent: dict[int, int] = {}  # per probe, everything this process sent
        self._since_install = 0  # probe decisions since `_probe` was read
        self._probe: Probe | None = None
        self._lock = threading.Lock()

    def installed(self, probe: Probe | None) -> None:
        """A snapshot came in: when it carries a newly read probe, its `remaining` counts
        from the database again (a snapshot that only brings telemetry keeps the probe
        object it had, and the count since)."""
        with self._lock:
            if probe is not self._probe:
                self._probe = probe
                self._since_install = 0

    def apply(
        self, probe: Probe | None, sticky_key: str, choice: Choice, *, split: bool, k: int
    ) -> tuple[Choice, dict[str, Any] | None]:
        """`choice`, or a probe's answer in its place with the receipt's note (None when the
        decision is not the probe's). A fleet with a split stage keeps its answers: a probe
        reorders one-node answers only (docs/twin.md)."""
        if probe is None or split or choice.scores is None or not choice.order:
            return choice, None
        with self._lock:
            if (
                self._sent.get(probe.probe_id, 0) >= probe.max_requests
                or self._since_install >= probe.remaining
            ):
                return choice, None
        if not in_probe(probe, sticky_key):
            return choice, None
        candidates = choice.candidates
        pick = probe_pick(probe, candidates)
        if pick is None:
            return choice, None
        with self._lock:
            self._sent[probe.probe_id] = self._sent.get(probe.probe_id, 0) + 1
            self._since_install += 1
        note = {
            "id": probe.probe_id,
            "node": pick.node,
            # What the policy would have sent: the probe's answer is not the policy's, so
            # the canary's figures and the policy's evaluations leave these decisions out.
            "policy_pick": candidates.names[choice.order[0]],
            "ttft_ms": round(pick.ttft_ms, 3),
            "ttft_target_ms": round(pick.ttft_target_ms, 3),
        }
        order = probe_order(choice.order, pick, k)
        return Choice(candidates, choice.trip, choice.scores, order), note
