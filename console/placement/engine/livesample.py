"""The live stream's bounded view of the decisions, kept by the recorder: every
`summary_interval_s` one `decision.summary` event with counts per node and policy, plus at
most `sampled_per_interval` individual `decision` events (docs/contracts.md §4 streams; the
dashboard says on screen that it shows a sample)."""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class LiveSample:
    summary_interval_s: float = 1.0
    sampled_per_interval: int = 20

    def __post_init__(self) -> None:
        self._window_start = time.monotonic()
        self._by_node: Counter[str] = Counter()
        self._by_policy: Counter[str] = Counter()
        self._sampled = 0
        self._pending: deque[tuple[str, dict[str, Any]]] = deque(maxlen=1000)

    def note(self, row: dict[str, Any], event: Callable[[], dict[str, Any]]) -> None:
        """Count a record (request path); `event` is called only when it is sampled."""
        self._by_node[row["node"]] += 1
        self._by_policy[f"{row['policy_name']}@{row['policy_version']}"] += 1
        if self._sampled < self.sampled_per_interval:
            self._sampled += 1
            self._pending.append(("decision", event()))

    def publish_due(self, publish: Callable[[str, dict[str, Any]], None]) -> None:
        """Publish the sampled events, and the summary once its interval has passed."""
        while self._pending:
            event_type, data = self._pending.popleft()
            publish(event_type, data)
        now = time.monotonic()
        elapsed = now - self._window_start
        if elapsed < self.summary_interval_s:
            return
        total = sum(self._by_node.values())
        if total:
            publish(
                "decision.summary",
                {
                    "window_s": round(elapsed, 3),
                    "total": total,
                    "by_node": dict(self._by_node),
                    "by_policy": dict(self._by_policy),
                    "sampled": self._sampled,
                },
            )
        self._window_start = now
        self._by_node = Counter()
        self._by_policy = Counter()
        self._sampled = 0
