"""`tools.validation_set`: the set it writes, and replays kept so a second candidate replays
only its own runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from optimizer.heldout.guard import validation_files, validation_match
from optimizer.rl.replays import trace_job
from optimizer.topology_files import load_topology
from optimizer.traces import load_trace
from tools import validation_set


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], list[Path]]:
    out = tmp_path_factory.mktemp("vset")
    fleets, traces = validation_set.write_set(out)
    return out, fleets, traces


def test_each_generated_fleet_comes_with_default_and_tight_slos_on_the_same_nodes(
    written: tuple[Path, list[Path], list[Path]],
) -> None:
    _, fleets, _ = written
    generated = fleets[:6]
    assert [f.stem for f in generated] == [
        "v300", "v300-slo0.5", "v301", "v301-slo0.5", "v302", "v302-slo0.5"
    ]  # fmt: skip
    for plain, tight in zip(generated[::2], generated[1::2], strict=True):
        a, b = load_topology(plain), load_topology(tight)
        assert a.nodes == b.nodes and a.sources == b.sources
        assert all(
            t.e2e_p95_ms <= p.e2e_p95_ms for p, t in zip(a.slos, b.slos, strict=True)
        ) and any(t.e2e_p95_ms < p.e2e_p95_ms for p, t in zip(a.slos, b.slos, strict=True))


def test_the_hand_written_validation_fleets_follow_as_they_are(
    written: tuple[Path, list[Path], list[Path]],
) -> None:
    _, fleets, _ = written
    hand = validation_files()
    assert len(hand) >= 2
    assert [f.name for f in fleets[6:]] == [f"hand-{f.name}" for f in hand]
    for copy, source in zip(fleets[6:], hand, strict=True):
        assert copy.read_bytes() == source.read_bytes()
        assert validation_match(copy) == source.name  # so train refuses the copy too


def test_the_traces_are_rows_the_suite_never_replays_as_they_are_and_x8(
    written: tuple[Path, list[Path], list[Path]],
) -> None:
    _, _, (short, long) = written
    plain, scaled = load_trace(str(short)), load_trace(str(long))
    assert len(plain) == len(scaled) == 2000
    assert [r.prompt_tokens * 8 for r in plain] == [r.prompt_tokens for r in scaled]
    suite = load_trace(str(validation_set.AZURE), limit=12_000)
    assert [r.prompt_tokens for r in plain] == [r.prompt_tokens for r in suite[10_000:]]


def test_the_set_is_the_same_bytes_every_time(
    written: tuple[Path, list[Path], list[Path]], tmp_path: Path
) -> None:
    _, fleets, traces = written
    again, again_traces = validation_set.write_set(tmp_path)
    for a, b in zip([*fleets, *traces], [*again, *again_traces], strict=True):
        assert a.read_bytes() == b.read_bytes()


def test_replays_are_kept_and_a_changed_policy_directory_is_replayed(
    written: tuple[Path, list[Path], list[Path]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, fleets, (short, _) = written
    calls: list[str] = []

    def replay(job: dict[str, Any]) -> dict[str, Any]:
        calls.append(str(job["policy"]))
        return {"slo_attainment": 0.5, "ttft_mean_ms": 10.0, "load": 1.0}

    monkeypatch.setattr(validation_set, "run_replay", replay)
    policy = tmp_path / "candidate"
    policy.mkdir()
    (policy / "scorer.pt").write_bytes(b"weights")
    (policy / "policy.json").write_text("{}")
    jobs = [
        trace_job(topology=str(fleets[0]), trace=str(short), policy=p, load=1.0, seed=0, limit=5)
        for p in ("least-loaded", str(policy))
    ]
    cache = tmp_path / "results"
    results = validation_set.replay_all(jobs, cache, workers=1)
    assert calls == ["least-loaded", str(policy)] and len(list(cache.iterdir())) == 2
    assert validation_set.replay_all(jobs, cache, workers=1) == results
    assert len(calls) == 2
    (policy / "scorer.pt").write_bytes(b"retrained")
    validation_set.replay_all(jobs, cache, workers=1)
    assert calls[2:] == [str(policy)]
