"""The live state's own sends (issue #30): a split's decode half counts among the decode node's
running sequences, not in its queue of prompts, and a sample measured after it covers it as it
covers a whole request; so the node's prefill estimate stays what the sample alone gives."""

from __future__ import annotations

import numpy as np

from optimizer.decide.state.estimates import queue_and_prefill
from optimizer.decide.state.fleet import D_QUEUE, D_RUNNING, DYNAMIC_COLUMNS, Fleet
from optimizer.decide.state.live import LiveState, NodeSample

SAMPLE = NodeSample(queue_depth=2, running=3, kv_usage=0.1, measured_at=100.0)


def _live(fleet: Fleet) -> LiveState:
    live = LiveState(fleet)
    live.observe_all({name: SAMPLE for name in fleet.names})
    return live


def test_a_decode_half_raises_the_running_count_and_a_whole_request_the_queue(
    fleet: Fleet,
) -> None:
    live = _live(fleet)
    live.sent(0, 0, (1, 2), decode_only=True)
    live.sent(0, 0, (1, 2), decode_only=True)
    live.sent(1, 0, (3,))
    assert (live.dynamic[0, D_QUEUE], live.dynamic[0, D_RUNNING]) == (2, 5)
    assert (live.dynamic[1, D_QUEUE], live.dynamic[1, D_RUNNING]) == (3, 3)
    # Its prompt's KV arrives there: its blocks join the node's approximate cache either way.
    assert live.prefix.match(np.array([0]), 0, (1, 2)).tolist() == [2.0]


def test_an_older_sample_keeps_the_decode_halves_a_newer_one_covers_them(fleet: Fleet) -> None:
    live = _live(fleet)
    live.sent(0, 0, (), decode_only=True)
    live.sent(0, 0, ())
    live.observe(0, NodeSample(2, 3, 0.1, measured_at=99.0))  # measured before the sends
    assert (live.dynamic[0, D_QUEUE], live.dynamic[0, D_RUNNING]) == (3, 4)
    live.observe(0, NodeSample(5, 7, 0.1, measured_at=101.0))  # after: it holds them
    assert (live.dynamic[0, D_QUEUE], live.dynamic[0, D_RUNNING]) == (5, 7)
    assert live.sent_since[0] == live.decode_since[0] == 0


def test_a_peers_decode_half_counts_as_its_own_until_a_later_sample(fleet: Fleet) -> None:
    live = _live(fleet)
    live.sent_by_peer(0, 0, (), 99.0, decode_only=True)  # the sample covers it
    live.sent_by_peer(0, 0, (), 100.5, decode_only=True)
    assert (live.dynamic[0, D_QUEUE], live.dynamic[0, D_RUNNING]) == (2, 4)


def test_a_decode_half_does_not_price_as_a_queued_prompt(fleet: Fleet) -> None:
    """The estimate of a prompt's queue wait on the node: a whole request sent there adds a
    prompt's prefill; a decode half adds at most a decode step (it waits for a batch slot)."""
    prompt = 8000
    s = fleet.static[0][:1]

    def wait_after(decode_only: bool) -> float:
        live = _live(fleet)
        before = queue_and_prefill(prompt, s, live.dynamic[:1], None)[5][0]
        live.sent(0, 0, (), decode_only=decode_only)
        return float(queue_and_prefill(prompt, s, live.dynamic[:1], None)[5][0] - before)

    whole, half = wait_after(False), wait_after(True)
    prefill_s = float(queue_and_prefill(prompt, s, np.zeros((1, DYNAMIC_COLUMNS)), None)[1][0])
    assert whole >= prefill_s  # one more prompt like this one ahead of it
    assert 0 <= half < prefill_s / 10


def test_a_new_topology_keeps_the_decode_halves_sent_since(fleet: Fleet) -> None:
    live = _live(fleet)
    live.sent(0, 0, (), decode_only=True)
    again = LiveState(fleet, previous=live)
    again.observe(0, NodeSample(2, 3, 0.1, measured_at=99.0))
    assert again.dynamic[0, D_RUNNING] == 4
