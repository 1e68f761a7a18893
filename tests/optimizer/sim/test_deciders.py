"""`--deciders K` and `--shared-view` (optimizer.sim.deciders): K deciders, each with its own
LiveState fed the same scrapes, or one shared view; how requests are split among them."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from optimizer.cli import main
from optimizer.commands.replay import Workload
from optimizer.decide.registry import get_policy
from optimizer.decide.state.fleet import D_QUEUE
from optimizer.sim import Deciders, Simulator, TelemetryModel, engine
from optimizer.sim.telemetry import TelemetryFeed
from tests.optimizer.fleets import FLEET_DEMO, MOONCAKE, request, tiny_topology


def test_requests_without_a_session_are_dealt_round_robin() -> None:
    split = Deciders.split_of([None] * 7, 3)
    assert split.of == (0, 1, 2, 0, 1, 2, 0)
    assert split.split == "round-robin"


def test_a_session_always_goes_to_the_decider_its_stable_hash_names() -> None:
    sessions = ["conv-a", None, "conv-b", "conv-a", None, "conv-c"]
    split = Deciders.split_of(sessions, 4)
    # crc32, not Python's per-process salted hash(): the same split in every run.
    assert split.of[0] == split.of[3] == zlib.crc32(b"conv-a") % 4 == 0
    assert split.of[2] == zlib.crc32(b"conv-b") % 4 == 2
    # Requests without a session take turns among themselves.
    assert (split.of[1], split.of[4]) == (0, 1)
    assert split.split == "session+round-robin"


def test_a_shared_view_is_one_live_state_for_every_decider() -> None:
    split = Deciders.split_of([None] * 4, 4, shared_view=True)
    assert split.views == 1 and {split.view_of(r) for r in range(4)} == {0}
    own = Deciders.split_of([None] * 4, 4)
    assert own.views == 4 and [own.view_of(r) for r in range(4)] == [0, 1, 2, 3]


@pytest.mark.parametrize("count", [0, -1])
def test_fewer_than_one_decider_is_refused(count: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Deciders.split_of([None], count)


def _replay(deciders: Deciders | None) -> tuple[list[float], TelemetryFeed]:
    """Six requests 10 s apart to the one node, each long finished before the next, with no
    scrape in 1000 s: each decider's queue for the node is what it sent itself. Returns the
    queue the placing decider saw at each arrival, and the feed."""
    topo = tiny_topology(keep_nodes=("core-l",))
    reqs = [request(topo, prompt=600, output=5, hashes=(10 * i, 10 * i + 1)) for i in range(6)]
    sim = Simulator(
        topo,
        get_policy("least-loaded", topo),
        reqs,
        [10.0 * i for i in range(6)],
        telemetry=TelemetryModel(1000.0),
        deciders=deciders,
    )
    sim.start()
    seen = []
    while (rid := sim.advance()) is not None:
        candidates = sim.candidates(rid)
        seen.append(float(candidates.dynamic[0, D_QUEUE]))
        sim.send(rid, int(candidates.index[0]), sim.now)
    assert sim.telemetry is not None
    return seen, sim.telemetry


def test_each_decider_sees_only_its_own_sends_and_prompts() -> None:
    seen, feed = _replay(Deciders.split_of([None] * 6, 2))
    assert seen == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
    assert [int(v.sent_since[0]) for v in feed.views] == [3, 3]
    # Decider 0 placed requests 0, 2, 4: it knows where their blocks went, not 1, 3, 5's.
    first, second = (v.prefix.cache_of(0) for v in feed.views)
    assert [first.match(0, (10 * i, 10 * i + 1)) for i in range(6)] == [2, 0, 2, 0, 2, 0]
    assert [second.match(0, (10 * i, 10 * i + 1)) for i in range(6)] == [0, 2, 0, 2, 0, 2]


def test_a_shared_view_sees_every_deciders_sends_and_prompts() -> None:
    seen, feed = _replay(Deciders.split_of([None] * 6, 2, shared_view=True))
    assert seen == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert len(feed.views) == 1 and int(feed.live.sent_since[0]) == 6
    cache = feed.live.prefix.cache_of(0)
    assert [cache.match(0, (10 * i, 10 * i + 1)) for i in range(6)] == [2] * 6


def test_one_decider_replays_as_without_the_option() -> None:
    alone, _ = _replay(None)
    shared, _ = _replay(Deciders.split_of([None] * 6, 3, shared_view=True))
    assert alone == shared == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_several_deciders_need_a_telemetry_model() -> None:
    topo = tiny_topology(keep_nodes=("core-l",))
    with pytest.raises(ValueError, match="--telemetry-interval"):
        Simulator(topo, get_policy("least-loaded", topo), [request(topo)], [0.0],
                  deciders=Deciders.split_of([None], 2))  # fmt: skip


def test_a_split_of_another_number_of_requests_is_refused() -> None:
    topo = tiny_topology(keep_nodes=("core-l",))
    three = Deciders.split_of([None] * 3, 2)
    with pytest.raises(ValueError, match="3 deciders assigned to 1 requests"):
        Simulator(topo, get_policy("least-loaded", topo), [request(topo)], [0.0],
                  telemetry=TelemetryModel(10.0), deciders=three)  # fmt: skip


def test_the_split_and_the_replay_are_the_same_for_a_seed() -> None:
    def run() -> tuple[tuple[int, ...], dict]:  # type: ignore[type-arg]
        work = Workload.of(str(FLEET_DEMO), str(MOONCAKE), load=4, seed=1, limit=300,
                           telemetry_interval=10, deciders=4)  # fmt: skip
        assert work.deciders is not None
        report, _ = work.run("weighted-score", 1, False)
        return work.deciders.of, report["per_node"]

    first, again = run(), run()
    assert first == again
    assert set(first[0]) == {0, 1, 2, 3}


BASE = ["--topology", str(FLEET_DEMO), "--trace", str(MOONCAKE), "--limit", "300", "--load", "4"]


def test_evaluate_with_one_decider_writes_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The wall-clock figures (wall_seconds, sim_speedup) are the only ones that vary between
    # runs; a frozen clock makes the reports comparable byte for byte.
    monkeypatch.setattr(engine, "time", SimpleNamespace(perf_counter=lambda: 0.0))
    args = [*BASE, "--policies", "weighted-score,prefix-aware", "--telemetry-interval", "10"]
    assert main(["evaluate", *args, "--report", str(tmp_path / "a" / "r.json")]) == 0
    one = ["--deciders", "1", "--report", str(tmp_path / "b" / "r.json")]
    assert main(["evaluate", *args, *one]) == 0
    before = (tmp_path / "a" / "r.json").read_bytes()
    assert before == (tmp_path / "b" / "r.json").read_bytes()
    assert "deciders" not in json.loads(before)


def test_simulate_reports_the_deciders_and_independent_ones_place_differently(
    tmp_path: Path,
) -> None:
    def simulate(*extra: str) -> dict:  # type: ignore[type-arg]
        out = tmp_path / f"{len(list(tmp_path.iterdir()))}.json"
        args = [*BASE, "--policy", "weighted-score", "--telemetry-interval", "10"]
        assert main(["simulate", *args, *extra, "--report", str(out)]) == 0
        return json.loads(out.read_text())

    one, own = simulate(), simulate("--deciders", "4")
    shared = simulate("--deciders", "4", "--shared-view")
    assert own["deciders"] == {"count": 4, "shared_view": False, "split": "round-robin"}
    assert shared["deciders"]["shared_view"] is True
    assert own["per_node"] != one["per_node"]
    # Without a publish delay, a shared view places as one decider does.
    assert shared["per_node"] == one["per_node"]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--deciders", "4"], "--deciders needs --telemetry-interval"),
        (["--deciders", "4", "--shared-view"], "--deciders needs --telemetry-interval"),
        (["--shared-view", "--telemetry-interval", "10"], "--shared-view needs --deciders"),
    ],
)
def test_deciders_without_telemetry_or_a_lone_shared_view_are_errors(
    extra: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", *BASE, "--policy", "random", *extra]) == 2
    assert needle in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_a_bad_number_of_deciders_is_a_usage_error(value: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["simulate", *BASE, "--policy", "random", "--deciders", value])
    assert exc.value.code == 2
