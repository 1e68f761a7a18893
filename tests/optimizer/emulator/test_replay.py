"""The same requests through the emulator and through the simulator give the same TTFTs.

Sixty Mooncake requests at 6x their arrival rate on one node (about three quarters busy, with
queueing, batching and shared prefixes; tests/optimizer/emulator/replay.py), server and client
on one loop on the virtual clock: the client sends each request at its trace arrival time to
the float, so what it measures, through real HTTP, is the simulator's TTFT on the trace's own
arrival times (relative error ~1e-14 measured), and the emulator's model is the simulator on
the arrival times the emulator received the requests at. A model that ignored the queue or
the prefill rate would be off by more than half. On the real clock the client's error is the
machine's (a median of 7-10% on the shared 2-core machine): tests/bench/bench_emulator.py
measures it.
"""

from __future__ import annotations

from tests.optimizer.emulator.replay import replay


def _relative(measured: float, expected: float) -> float:
    return abs(measured - expected) / expected


def test_a_replay_through_the_emulator_matches_the_simulator() -> None:
    pairs = replay(requests=60, load=6.0, max_output=32)
    assert len(pairs) == 60
    assert max(_relative(p.emulator, p.resimulated) for p in pairs) < 1e-9
    assert [p.cached_emulator for p in pairs] == [p.cached_simulator for p in pairs]
    assert sum(p.cached_simulator for p in pairs) > 0  # the slice shares prefixes
    assert max(_relative(p.client, p.simulator) for p in pairs) < 1e-9
