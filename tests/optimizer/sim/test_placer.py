"""The simulator's control plane (`optimizer.sim.placer`) runs the live engine's breakers and
staleness filter when asked, through the same filter files as the console's engine
(`optimizer.decide.filters`), and neither by default."""

from __future__ import annotations

import pytest

from optimizer.decide.filters.breakers import OPEN, BreakerConfig
from optimizer.decide.registry import get_policy
from optimizer.sim import ScheduledEvent, Simulator, TelemetryModel, simulate
from tests.optimizer.fleets import request, tiny_topology

CORE, CLOUD = 0, 1  # topology order of the two nodes kept


def _failing_fleet(**kw: object):  # type: ignore[no-untyped-def]
    """latency-first on core and cloud; core fails at 1.95 s (losing what it runs) and
    recovers at 4.05 s."""
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    reqs = [request(topo, prompt=300, output=200) for _ in range(60)]
    arrivals = [i * 0.1 for i in range(60)]
    events = [ScheduledEvent(1.95, "core-l", "fail"), ScheduledEvent(4.05, "core-l", "recover")]
    policy = get_policy("latency-first", topo)
    return simulate(topo, policy, reqs, arrivals, events=events, **kw)  # type: ignore[arg-type]


def test_without_breakers_a_recovered_node_takes_traffic_at_once() -> None:
    nodes = _failing_fleet().table.node
    assert CORE in nodes[41:]


def test_with_breakers_the_failures_keep_a_recovered_node_out_until_it_half_opens() -> None:
    config = BreakerConfig(consecutive_failures=1, open_s=60.0)
    nodes = _failing_fleet(breakers=config).table.node
    assert all(node == CLOUD for node in nodes[20:])  # open for the rest of the run


def test_the_breakers_see_the_runs_own_clock() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    reqs = [request(topo, prompt=300, output=200) for _ in range(30)]
    events = [ScheduledEvent(1.95, "core-l", "fail")]
    sim = Simulator(
        topo,
        get_policy("latency-first", topo),
        reqs,
        [i * 0.1 for i in range(30)],
        events,
        breakers=BreakerConfig(consecutive_failures=1, open_s=1.0),
    )
    sim.run()
    assert sim.breakers is not None
    assert sim.breakers.state("core-l") != OPEN  # opened at ~2 s, half-open a second later


def test_staleness_needs_telemetry() -> None:
    topo = tiny_topology()
    with pytest.raises(ValueError, match="telemetry"):
        Simulator(topo, get_policy("least-loaded", topo), [], [], stale_after_s=30.0)


def test_a_stale_threshold_above_the_scrape_interval_changes_nothing() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    reqs = [request(topo, prompt=300, output=50) for _ in range(80)]
    arrivals = [i * 0.05 for i in range(80)]
    policy = "least-loaded"

    def run(**kw: object) -> list[int]:
        telemetry = TelemetryModel(1.0, seed=3)
        result = simulate(
            topo,
            get_policy(policy, topo),
            reqs,
            arrivals,
            telemetry=telemetry,
            **kw,  # type: ignore[arg-type]
        )
        return list(result.table.node)

    assert run() == run(stale_after_s=30.0)


def test_a_recovered_nodes_old_sample_keeps_it_out_until_it_is_scraped_again() -> None:
    """Down from 25 s to 70 s (scraped every 20 s, so at least once before), its exporter
    silent: on recovery its last sample is over 45 s old, so with a 30 s threshold it takes
    nothing until a scrape after its recovery reaches the engine."""
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    reqs = [request(topo, prompt=300, output=5) for _ in range(750)]
    arrivals = [i * 0.1 for i in range(750)]
    events = [ScheduledEvent(25.0, "core-l", "fail"), ScheduledEvent(70.0, "core-l", "recover")]

    def nodes_just_after_recovery(**kw: object) -> list[int]:
        result = simulate(
            topo,
            get_policy("latency-first", topo),
            reqs,
            arrivals,
            events=events,
            telemetry=TelemetryModel(20.0, seed=1),
            **kw,  # type: ignore[arg-type]
        )
        return [result.table.node[i] for i in range(701, 705)]  # 70.1-70.4 s

    assert CORE in nodes_just_after_recovery()
    assert nodes_just_after_recovery(stale_after_s=30.0) == [CLOUD] * 4
