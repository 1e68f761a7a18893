"""The command line (docs/contracts.md §3): reports, plots, errors, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from optimizer.cli import main
from tests.optimizer.fleets import AZURE, FLEET_DEMO, MOONCAKE, TINY

CONTRACT_KEYS = {
    "requests",
    "served",
    "rejected",
    "ttft_ms",
    "e2e_ms",
    "slo_attainment",
    "cost_usd",
    "cost_per_1k_requests",
    "egress_gb",
    "prefix_hit_rate",
    "residency_violations",
    "per_node",
    "wall_seconds",
    "sim_speedup",
}


def _simulate(tmp_path: Path, name: str, *extra: str) -> dict:  # type: ignore[type-arg]
    out = tmp_path / name
    code = main(
        [
            "simulate",
            "--topology",
            str(FLEET_DEMO),
            "--trace",
            str(MOONCAKE),
            "--policy",
            "prefix-aware",
            "--limit",
            "300",
            "--report",
            str(out),
            *extra,
        ]
    )
    assert code == 0
    return json.loads(out.read_text())


def test_simulate_writes_every_contract_key(tmp_path: Path) -> None:
    report = _simulate(tmp_path, "r.json")
    assert set(report) >= CONTRACT_KEYS
    assert set(report["ttft_ms"]) == {"mean", "p50", "p95", "p99"}
    assert report["requests"] == 300 and report["residency_violations"] == 0
    assert all(set(v) == {"requests", "utilization"} for v in report["per_node"].values())


def test_same_seed_gives_the_same_report(tmp_path: Path) -> None:
    a, b = _simulate(tmp_path, "a.json"), _simulate(tmp_path, "b.json")
    for r in (a, b):
        r.pop("wall_seconds"), r.pop("sim_speedup")
    assert a == b
    c = _simulate(tmp_path, "c.json", "--seed", "1")
    assert c["ttft_ms"] != a["ttft_ms"]


def test_evaluate_writes_policies_oracle_and_plots(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "eval.json"
    code = main(
        [
            "evaluate",
            "--topology",
            str(FLEET_DEMO),
            "--trace",
            str(AZURE),
            "--policies",
            "round-robin,weighted-score",
            "--limit",
            "400",
            "--load",
            "4",
            "--report",
            str(out),
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    assert set(report["policies"]) == {"round-robin", "weighted-score"}
    oracle = report["oracle"]
    assert 0 <= oracle["slo_attainment"] <= 1 and oracle["ttft_ms"]["mean"] > 0
    for policy in report["policies"].values():
        assert policy["slo_attainment"] <= oracle["slo_attainment"]
    assert (tmp_path / "eval-ttft-cdf.png").stat().st_size > 0
    assert (tmp_path / "eval-slo-cost.png").stat().st_size > 0
    assert "weighted-score" in capsys.readouterr().out


def test_events_file_drains_a_node(tmp_path: Path) -> None:
    events = tmp_path / "ops.yaml"
    events.write_text("events:\n  - {at_s: 0, node: fra-h100-2, action: drain}\n")
    report = _simulate(tmp_path, "r.json", "--events", str(events))
    assert report["per_node"]["fra-h100-2"]["requests"] == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--topology", "missing.yaml"], "cannot read file"),
        (["--trace", "nope.parquet"], "unknown trace format"),
        (["--policy", "magic"], "unknown policy 'magic'"),
    ],
)
def test_bad_inputs_print_error_and_exit_2(args: list[str], needle: str, capsys) -> None:  # type: ignore[no-untyped-def]
    base = {"--topology": str(FLEET_DEMO), "--trace": str(MOONCAKE), "--policy": "random"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    argv = ["simulate", *[x for kv in base.items() for x in kv], "--limit", "10"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err and "Traceback" not in err


def test_a_report_that_cannot_be_written_is_an_error(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["simulate", "--topology", str(FLEET_DEMO), "--trace", str(MOONCAKE)]
    argv += ["--policy", "random", "--limit", "10", "--report", str(tmp_path)]
    assert main(argv) == 2
    assert "cannot write the report" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--seed", "-1"),
        ("--load", "nan"),
        ("--load", "0"),
        ("--limit", "-5"),
        ("--limit", "ten"),
    ],
)
def test_bad_arguments_are_usage_errors(flag: str, value: str, capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["simulate", "--topology", str(FLEET_DEMO), "--trace", str(MOONCAKE)]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--policy", "random", flag, value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--timesteps", "0"),
        ("--teacher", "nosuch"),
        ("--eval-seeds", "-1"),
        ("--cost-weight", "-1"),
    ],
)
def test_bad_training_arguments_are_usage_errors(flag: str, value: str, tmp_path: Path) -> None:
    argv = ["train", "--topology", str(FLEET_DEMO), "--trace", str(MOONCAKE)]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--out", str(tmp_path / "out"), flag, value])
    assert exit_info.value.code == 2


def test_train_refuses_a_file_as_its_output_directory(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "taken"
    out.write_text("x")
    argv = ["train", "--topology", str(FLEET_DEMO), "--trace", str(MOONCAKE), "--out", str(out)]
    assert main(argv) == 2
    assert "--out must be a directory" in capsys.readouterr().err


def test_policies_command_lists_the_builtins(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["policies"]) == 0
    assert "kv-aware" in capsys.readouterr().out.split()


def test_bench_decide_prints_kernel_and_reference_figures_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topology = tmp_path / "tiny.yaml"
    topology.write_text(yaml.safe_dump(TINY))
    assert main(["bench-decide", "--topology", str(topology), "--json", "--repeats", "5"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert set(figures) == {"kernel", "reference"}
    for impl in figures.values():
        assert set(impl) == {"random", "round-robin", "least-loaded", "latency-first",
                             "cost-first", "data-gravity", "weighted-score", "prefix-aware",
                             "kv-aware"}  # fmt: skip
        for sizes in impl.values():
            assert set(sizes) == {"8", "64", "256", "1000"}
            assert all(0 < f["p50_us"] <= f["p99_us"] for f in sizes.values())


def test_bench_scorer_times_the_numpy_twin_beside_torchscript_on_kernel_candidates(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shipped = FLEET_DEMO.parents[1] / "trained" / "ppo-fleet-demo"
    assert main(["bench-scorer", "--policy", str(shipped), "--repeats", "5"]) == 0
    table = capsys.readouterr().out
    for n in ("8", "64", "256"):
        lines = [line for line in table.splitlines() if line.split()[:1] == [n]]
        assert any("numpy twin" in line for line in lines)
        assert any("TorchScript" in line for line in lines)
