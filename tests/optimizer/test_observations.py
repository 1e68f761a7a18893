"""Observations (docs/contracts.md §5): written by `simulate --requests-out`, read as a trace
with their sources and models as given, checked line by line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.arrivals import draw_requests
from optimizer.cli import main
from optimizer.observations import load_observations
from optimizer.topology_files import load_topology
from optimizer.traces import load_trace
from tests.optimizer.fleets import AZURE, FLEET_DEMO, MOONCAKE

FIELDS = [
    "timestamp",
    "input_length",
    "output_length",
    "hash_ids",
    "source",
    "model",
    "slo",
    "node",
    "ttft_ms",
    "e2e_ms",
    "ok",
]


def _observe(tmp_path: Path, *, trace: Path = MOONCAKE, limit: int = 200, seed: int = 0) -> Path:
    out = tmp_path / "obs.jsonl"
    code = main(
        [
            "simulate",
            "--topology",
            str(FLEET_DEMO),
            "--trace",
            str(trace),
            "--policy",
            "least-loaded",
            "--limit",
            str(limit),
            "--seed",
            str(seed),
            "--report",
            str(tmp_path / "r.json"),
            "--requests-out",
            str(out),
        ]
    )
    assert code == 0
    return out


def test_simulate_writes_one_observation_per_request(tmp_path: Path) -> None:
    lines = _observe(tmp_path).read_text().splitlines()
    report = json.loads((tmp_path / "r.json").read_text())
    assert len(lines) == report["requests"] == 200
    records = [json.loads(line) for line in lines]
    assert all(list(r)[: len(FIELDS)] == FIELDS for r in records)
    served = [r for r in records if r["ok"]]
    assert len(served) == report["served"]
    assert all(r["node"] and 0 < r["ttft_ms"] <= r["e2e_ms"] for r in served)
    trace = load_trace(MOONCAKE, limit=200)
    assert [r["input_length"] for r in records] == [t.prompt_tokens for t in trace]
    assert records[5]["hash_ids"] == list(trace[5].hash_ids)


def test_observations_replay_as_a_trace_with_their_own_sources_and_models(
    tmp_path: Path,
) -> None:
    path = _observe(tmp_path, seed=0)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    topology = load_topology(FLEET_DEMO)
    # Another seed would draw other sources and models; given ones are kept.
    requests = draw_requests(load_trace(path), topology, seed=7)
    assert [(r.source, r.model, r.slo) for r in requests] == [
        (o["source"], o["model"], o["slo"]) for o in records
    ]


def test_a_site_without_source_and_a_null_slo_are_taken_as_given(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"timestamp": 0, "input_length": 10, "output_length": 2, "site": "fra-core",'
        ' "model": "qwen2.5-7b", "slo": null}\n'
    )
    (request,) = draw_requests(load_trace(path), load_topology(FLEET_DEMO), seed=0)
    assert (request.source, request.source_site, request.slo) == (None, "fra-core", None)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("model", "gpt-9", "field 'model': unknown model 'gpt-9'"),
        ("source", "nowhere-app", "field 'source': unknown source 'nowhere-app'"),
        ("slo", "platinum", "field 'slo': unknown SLO 'platinum'"),
        ("model", 7, "field 'model': expected a name"),
    ],
)
def test_an_unknown_name_in_a_trace_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: object, message: str
) -> None:
    good = {"timestamp": 0, "input_length": 10, "output_length": 2, "model": "qwen2.5-7b"}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, field: value}) + "\n")
    code = main(
        ["simulate", "--topology", str(FLEET_DEMO), "--trace", str(path), "--policy", "random"]
    )
    assert code == 2
    assert f"error: {path}:3: {message}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"node": "atlantis-1"}, "field 'node': unknown node 'atlantis-1'"),
        ({"node": "fra-h100x4-70b"}, "field 'node': 'fra-h100x4-70b' does not serve"),
        ({"ttft_ms": "fast"}, "field 'ttft_ms': expected milliseconds"),
        ({"ttft_ms": 1e300}, "field 'ttft_ms': must be within"),
        ({"e2e_ms": 1.0, "ttft_ms": 2.0}, "field 'e2e_ms': must not be less than ttft_ms"),
        ({"ok": "yes"}, "field 'ok': expected true or false"),
        ({"ok": None}, "field 'ok': expected true or false"),
        ({"input_length": 10**100}, "field 'input_length': must be at most 10000000"),
        # A split request (issue #30): its prefill node is checked as its node is.
        ({"prefill_node": "atlantis-1"}, "field 'prefill_node': unknown node 'atlantis-1'"),
        ({"prefill_node": 7}, "field 'prefill_node': unknown node 7"),
        ({"prefill_node": "fra-h100x4-70b"}, "field 'prefill_node': 'fra-h100x4-70b' does not"),
        ({"prefill_node": "nyc-orin-1"}, "field 'prefill_node': 'nyc-orin-1' is unreachable"),
        (
            {"node": None, "prefill_node": "fra-a100-1"},
            "field 'prefill_node': a rejected request has none",
        ),
    ],
)
def test_a_bad_observation_names_file_and_line(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    lines = _observe(tmp_path, trace=AZURE, limit=5).read_text().splitlines()
    record = json.loads(lines[3])
    record.update(model="qwen2.5-7b", node="fra-a100-2", source="eu-analytics")
    record.update(change)
    lines[3] = json.dumps(record)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=rf"bad.jsonl:4: {message}"):
        load_observations(path, load_topology(FLEET_DEMO))


def test_an_observation_without_its_outcome_fields_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trace-only.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 10, "output_length": 2}\n')
    with pytest.raises(ValueError, match=r"trace-only.jsonl:1: field 'node' is missing"):
        load_observations(path, load_topology(FLEET_DEMO))
