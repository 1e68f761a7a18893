"""`python -m optimizer calibrate` with a known truth: the fleet that produced the observations
is `fleet-demo-truth.yaml`, whose profiles differ from the nominal `fleet-demo.yaml` by
known factors (docs/twin.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from optimizer.cli import main
from optimizer.topology_files import load_topology
from tests.optimizer.fleets import AZURE, FLEET_DEMO

TRUTH = FLEET_DEMO.with_name("fleet-demo-truth.yaml")


def _simulate(out: Path, *, topology: Path, limit: int) -> None:
    code = main(
        [
            "simulate",
            "--topology",
            str(topology),
            "--trace",
            str(AZURE),
            "--policy",
            "least-loaded",
            "--limit",
            str(limit),
            "--load",
            "2",
            "--report",
            str(out.with_suffix(".report.json")),
            "--requests-out",
            str(out),
        ]
    )
    assert code == 0


def _calibrate(directory: Path, observations: Path, *extra: str) -> int:
    return main(
        [
            "calibrate",
            "--topology",
            str(FLEET_DEMO),
            "--observations",
            str(observations),
            "--out",
            str(directory / "calibrated.yaml"),
            "--report",
            str(directory / "report.json"),
            *extra,
        ]
    )


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    directory = tmp_path_factory.mktemp("calibrate")
    observations = directory / "obs.jsonl"
    _simulate(observations, topology=TRUTH, limit=6000)
    assert _calibrate(directory, observations) == 0
    return directory, json.loads((directory / "report.json").read_text())


def test_it_recovers_every_value_its_data_pins_down_and_keeps_the_rest(
    calibrated: tuple[Path, dict[str, Any]],
) -> None:
    directory, report = calibrated
    truth = {(p.model, p.accelerator): p for p in load_topology(TRUTH).profiles}
    entries = [p for p in report["profiles"] if p["status"] != "insufficient_data"]
    assert len(entries) == 11  # all but llama-3.1-70b on A100, which no node serves here
    pinned = 0
    for entry in entries:
        true = truth[(entry["model"], entry["accelerator"])]
        for name, value in entry["values"].items():
            if value["status"] in ("fitted", "agrees_with_nominal"):
                pinned += 1
                assert value["fitted"] == pytest.approx(getattr(true, name), rel=0.1), name
                assert value["identifiability"]["relative_ci"] <= 0.05
            else:
                assert value["status"] == "not_identifiable"
                assert value["fitted"] == value["nominal"]
    # The prefill rate and the step at the batch the data holds are pinned on every profile.
    assert pinned >= 22
    slower = next(p for p in entries if (p["model"], p["accelerator"]) == ("llama-3.1-8b", "l4"))
    assert slower["status"] == "fitted"
    assert slower["values"]["prefill_tokens_per_s"]["nominal"] == 3500
    lo, hi = slower["values"]["prefill_tokens_per_s"]["interval"]
    assert lo < slower["values"]["prefill_tokens_per_s"]["fitted"] < hi
    assert slower["values"]["prefill_tokens_per_s"]["samples"] == slower["samples"] > 50


def test_it_halves_the_ttft_error_and_brings_it_under_ten_percent(
    calibrated: tuple[Path, dict[str, Any]],
) -> None:
    _, report = calibrated
    fidelity = report["fidelity"]
    assert set(fidelity) == {"before", "after"}
    for when in ("before", "after"):
        assert set(fidelity[when]) == {"ttft", "e2e"}
        for metric in ("ttft", "e2e"):
            assert set(fidelity[when][metric]) == {"median_abs_rel_error", "p95_abs_rel_error"}
    before = fidelity["before"]["ttft"]["median_abs_rel_error"]
    after = fidelity["after"]["ttft"]["median_abs_rel_error"]
    assert after < 0.10 and after <= before / 2
    assert fidelity["after"]["e2e"]["median_abs_rel_error"] < 0.05


def test_it_writes_a_complete_topology_that_keeps_unfitted_profiles(
    calibrated: tuple[Path, dict[str, Any]],
) -> None:
    directory, report = calibrated
    nominal = load_topology(FLEET_DEMO)
    out = load_topology(directory / "calibrated.yaml")
    assert [n.name for n in out.nodes] == [n.name for n in nominal.nodes]
    assert out.links == nominal.links and out.slos == nominal.slos
    assert report["unfitted_profiles"] == ["llama-3.1-70b@a100-80"]
    assert out.profile("llama-3.1-70b", "a100-80") == nominal.profile("llama-3.1-70b", "a100-80")
    assert out.profile("llama-3.1-8b", "l4").prefill_tokens_per_s < 3500 * 0.9
    assert all(len(pair) == 3 for pair in report["ttft_pairs"])


def test_observations_of_the_nominal_fleet_replay_exactly(tmp_path: Path) -> None:
    observations = tmp_path / "obs.jsonl"
    _simulate(observations, topology=FLEET_DEMO, limit=800)
    # Nothing to improve on the nominal fleet: the proposal is refused (exit 3), the report
    # written.
    assert _calibrate(tmp_path, observations) == 3
    before = json.loads((tmp_path / "report.json").read_text())["fidelity"]["before"]
    assert before["ttft"]["median_abs_rel_error"] < 1e-4
    assert before["e2e"]["p95_abs_rel_error"] < 1e-4


def test_too_little_data_names_the_profiles_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    observations = tmp_path / "obs.jsonl"
    _simulate(observations, topology=TRUTH, limit=40)
    assert _calibrate(tmp_path, observations) == 2
    err = capsys.readouterr().err
    assert "too little data to calibrate" in err
    assert "llama-3.1-8b@l4: " in err and "nothing was changed" in err
    assert not (tmp_path / "calibrated.yaml").exists()
    assert not (tmp_path / "report.json").exists()


def test_a_bad_line_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    observations = tmp_path / "obs.jsonl"
    _simulate(observations, topology=TRUTH, limit=10)
    lines = observations.read_text().splitlines()
    lines[6] = lines[6].replace('"ok":true', '"ok":1').replace('"ok":false', '"ok":1')
    observations.write_text("\n".join(lines) + "\n")
    assert _calibrate(tmp_path, observations) == 2
    assert f"error: {observations}:7: field 'ok'" in capsys.readouterr().err
    assert not (tmp_path / "calibrated.yaml").exists()


def test_the_true_parameters_are_a_fixed_point_of_replay_and_solve(tmp_path: Path) -> None:
    """Replaying at the truth and solving the system read off that replay gives the truth
    back: the equations of optimizer/calibration/design.py are exact (docs/twin.md)."""
    import numpy as np

    from optimizer.calibration.design import Layout, Routes, accumulate
    from optimizer.calibration.fit import solve
    from optimizer.calibration.replay import all_active, replay
    from optimizer.calibration.theta import parameters
    from optimizer.observations import load_observations

    observations = tmp_path / "obs.jsonl"
    _simulate(observations, topology=TRUTH, limit=1500)
    nominal, truth = all_active(load_topology(FLEET_DEMO)), all_active(load_topology(TRUTH))
    loaded = load_observations(observations, nominal)
    layout = Layout(profiles=len(nominal.profiles), links=())
    true_theta = parameters(truth, ())
    eq = accumulate(
        truth, replay(truth, loaded), loaded, true_theta, layout, Routes(nominal, loaded, layout)
    )
    served = np.array(
        [p.model != "llama-3.1-70b" or p.accelerator == "h100" for p in nominal.profiles]
    )
    free = np.tile(served, 3)
    step = solve(eq, true_theta, free, np.zeros(layout.size))
    assert np.allclose(step.z[free], 1.0, atol=1e-4)
    assert step.rss < 1e-6 * eq.rows


def test_link_rtts_are_fitted_on_request(
    calibrated: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    directory, report = calibrated
    assert {link["status"] for link in report["links"]} <= {"not_fitted", "insufficient_data"}
    assert _calibrate(tmp_path, directory / "obs.jsonl", "--fit-links") == 0
    links = json.loads((tmp_path / "report.json").read_text())["links"]
    fitted = [link for link in links if link["status"] in ("fitted", "agrees_with_nominal")]
    # Short links trade a millisecond with queue waits, which the data cannot tell apart: they
    # are reported not identifiable and keep their nominal RTT (docs/twin.md).
    assert len(fitted) >= 5
    for link in links:
        if link["status"] == "not_identifiable":
            assert link["values"]["rtt_ms"]["fitted"] == link["values"]["rtt_ms"]["nominal"]
    # The truth's RTTs are the nominal ones; long links come back within 5% (short ones,
    # a few ms, trade a millisecond with queue waits: docs/twin.md).
    for link in fitted:
        rtt = link["values"]["rtt_ms"]
        if rtt["nominal"] >= 50:
            assert rtt["fitted"] == pytest.approx(rtt["nominal"], rel=0.05)
        assert rtt["samples"] == link["samples"] >= 50


def test_a_proposal_without_improvement_is_not_written_without_override(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Observations of the nominal fleet itself: nothing to improve, so the verdict is
    no_improvement, the command exits 3 with the report but no topology, and --override
    writes it (docs/twin.md)."""
    from optimizer.calibration.scenarios import Scenario, observe

    heldout = FLEET_DEMO.parent / "heldout" / "gpu-poor-regional.yaml"
    nominal = load_topology(heldout)
    observations = tmp_path / "obs.jsonl"
    observe(nominal, nominal, Scenario(str(AZURE), "spread", 0.6, 600), observations)
    args = [
        "calibrate",
        "--topology",
        str(heldout),
        "--observations",
        str(observations),
        "--out",
        str(tmp_path / "calibrated.yaml"),
        "--report",
        str(tmp_path / "report.json"),
    ]
    assert main(args) == 3
    out = capsys.readouterr().out
    assert "verdict: no_improvement" in out and "--override" in out
    assert not (tmp_path / "calibrated.yaml").exists()
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"]["verdict"] == "no_improvement" and report["written"] is False
    assert main([*args, "--override"]) == 0
    assert load_topology(tmp_path / "calibrated.yaml").profiles == nominal.profiles
    assert json.loads((tmp_path / "report.json").read_text())["written"] is True
