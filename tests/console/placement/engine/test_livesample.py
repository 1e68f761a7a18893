"""The live stream's sample of decisions: at most `sampled_per_interval` decision events per
interval, and one summary counting every decision by node and policy."""

from __future__ import annotations

from typing import Any

from console.placement.engine.livesample import LiveSample


def _row(node: str) -> dict[str, Any]:
    return {"node": node, "policy_name": "weighted-score", "policy_version": "builtin"}


def test_a_bounded_sample_and_a_summary_of_all() -> None:
    live = LiveSample(summary_interval_s=0.0, sampled_per_interval=2)
    built: list[str] = []

    def event(node: str) -> dict[str, Any]:
        built.append(node)
        return {"node": node}

    for node in ("a", "b", "a", "a"):
        live.note(_row(node), lambda node=node: event(node))  # type: ignore[misc]
    published: list[tuple[str, dict[str, Any]]] = []
    live.publish_due(lambda kind, data: published.append((kind, data)))
    assert built == ["a", "b"]  # events are built for the sampled decisions only
    kinds = [kind for kind, _ in published]
    assert kinds == ["decision", "decision", "decision.summary"]
    summary = published[-1][1]
    assert summary["total"] == 4 and summary["by_node"] == {"a": 3, "b": 1}
    assert summary["by_policy"] == {"weighted-score@builtin": 4} and summary["sampled"] == 2
    published.clear()
    live.publish_due(lambda kind, data: published.append((kind, data)))
    assert published == []  # a new window, with nothing in it
