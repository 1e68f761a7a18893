"""Merging other deciders' sends: a decider that merges every send of K others holds what one
decider making them all would hold (queues and prefix matches), and a sample measured after a
send covers it."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.decide.request import BLOCK_TOKENS
from optimizer.decide.state.fleet import D_QUEUE, D_RUNNING, S_KV_CAPACITY, Fleet
from optimizer.decide.state.live import LiveState, NodeSample
from optimizer.decide.state.shared import Send, decode, encode, merge


def _sample(at: float) -> NodeSample:
    return NodeSample(queue_depth=2, running=1, kv_usage=0.1, measured_at=at)


def test_a_merged_send_counts_as_one_of_its_own(fleet: Fleet) -> None:
    model = next(iter(fleet.model_index))
    own, shared = LiveState(fleet), LiveState(fleet)
    for live in (own, shared):
        live.observe_all({name: _sample(100.0) for name in fleet.names})
    sends = [
        Send(
            fleet.names[i % fleet.size],
            model,
            (7, 8, 9) if i % 2 else (7, 5),
            101.0 + i,
            decode_only=i % 3 == 0,  # some are splits' decode halves (issue #30)
        )
        for i in range(10)
    ]
    for s in sends:
        own.sent(
            fleet.index_of[s.node], fleet.model_index[s.model], s.hashes, decode_only=s.decode_only
        )
    assert merge(shared, decode(encode(sends))) == len(sends)
    assert np.array_equal(own.dynamic, shared.dynamic)
    assert shared.dynamic[:, D_RUNNING].sum() == fleet.size + 4  # the samples' and 4 halves
    index = np.arange(fleet.size)
    m = fleet.model_index[model]
    for probe in ((7, 8, 9), (7, 5), (8,)):
        assert np.array_equal(
            own.prefix.match(index, m, probe), shared.prefix.match(index, m, probe)
        )


def test_a_send_a_later_sample_covers_adds_its_blocks_but_no_queue(fleet: Fleet) -> None:
    model = next(iter(fleet.model_index))
    live = LiveState(fleet)
    live.observe_all({name: _sample(100.0) for name in fleet.names})
    node = fleet.names[0]
    merge(live, [Send(node, model, (1, 2), 99.0), Send(node, model, (3,), 100.0)])
    assert live.dynamic[0, D_QUEUE] == 2  # the sample's queue alone
    merge(live, [Send(node, model, (4,), 100.5)])
    assert live.dynamic[0, D_QUEUE] == 3
    live.observe(0, _sample(101.0))  # measured after the send: it is in there now
    assert live.dynamic[0, D_QUEUE] == 2
    m = fleet.model_index[model]
    assert live.prefix.match(np.array([0]), m, (1, 2)).tolist() == [2.0]


def test_sends_naming_nodes_or_models_the_fleet_lacks_are_skipped(fleet: Fleet) -> None:
    live = LiveState(fleet)
    model = next(iter(fleet.model_index))
    skipped = [Send("no-such-node", model, (1,), 1.0), Send(fleet.names[0], "no-model", (1,), 1.0)]
    assert merge(live, skipped) == 0
    assert not live.dynamic[:, D_QUEUE].any()


def test_merged_prefixes_stay_within_the_nodes_kv_room(fleet: Fleet) -> None:
    model = next(iter(fleet.model_index))
    room = int(fleet.static[0][0, S_KV_CAPACITY])
    block = BLOCK_TOKENS * fleet.kv_per_token[fleet.model_index[model]]
    blocks = 2 * room // block + 64  # twice what fits
    live = LiveState(fleet)
    merge(
        live,
        [Send(fleet.names[0], model, tuple(range(i, i + 64)), 1.0) for i in range(0, blocks, 64)],
    )
    cache = live.prefix.caches[0]
    assert cache is not None and room - block < cache.bytes <= room
    m = fleet.model_index[model]
    assert live.prefix.match(np.array([0]), m, (0,)).tolist() == [0.0]  # the oldest went first


@pytest.mark.parametrize("payload", [b"", b"{}", b"[[1]]", b'[["a","m","x",[1]]]'])
def test_anything_but_a_batch_is_refused(payload: bytes) -> None:
    with pytest.raises(ValueError):
        decode(payload)


def test_a_decode_half_travels_as_a_fifth_element_and_old_rows_still_decode(fleet: Fleet) -> None:
    model = next(iter(fleet.model_index))
    node = fleet.names[0]
    half, whole = Send(node, model, (1,), 101.0, True), Send(node, model, (2,), 101.0)
    assert (
        encode([half, whole])
        == f'[["{node}","{model}",101.0,[1],1],["{node}","{model}",101.0,[2]]]'.encode()
    )
    assert decode(encode([half, whole])) == [half, whole]
    # A batch from a decider that predates the phase: four elements, whole requests.
    old = f'[["{node}","{model}",101.0,[1,2]]]'.encode()
    assert decode(old) == [Send(node, model, (1, 2), 101.0, False)]
    live = LiveState(fleet)
    live.observe_all({name: _sample(100.0) for name in fleet.names})
    merge(live, decode(old) + [half])
    assert (live.dynamic[0, D_QUEUE], live.dynamic[0, D_RUNNING]) == (3, 2)


@pytest.mark.parametrize("payload", [b'[["a","m",1.0,[1],1,0]]', b'[["a","m",1.0]]', b'["a"]'])
def test_rows_of_other_lengths_are_refused(payload: bytes) -> None:
    with pytest.raises(ValueError):
        decode(payload)
