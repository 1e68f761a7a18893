"""tools/twin_suite.py: the seeded truth, the judgement of each value, and one tiny cell end to
end (a real simulation and calibration of a suite fleet, 300 requests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from optimizer.heldout.guard import HELDOUT_DIR
from optimizer.topology_files import load_topology
from tools import twin_suite
from tools.twin_suite import HIGH, LOW, judge, truth_factors, truth_of

FLEET = "mooncake-long-context"


def test_the_truth_is_drawn_per_value_from_the_seed_and_some_values_stay_nominal() -> None:
    nominal = load_topology(HELDOUT_DIR / f"{FLEET}.yaml")
    factors = truth_factors(nominal, FLEET, 26)
    assert factors == truth_factors(nominal, FLEET, 26)
    assert factors != truth_factors(nominal, FLEET, 27)
    every = [
        f
        for fleet in twin_suite.TRACES
        for per_value in truth_factors(
            load_topology(HELDOUT_DIR / f"{fleet}.yaml"), fleet, 26
        ).values()
        for f in per_value.values()
    ]
    assert all(f == 1.0 or LOW <= f <= HIGH for f in every)
    assert 1.0 in every and any(f != 1.0 for f in every)
    truth = truth_of(nominal, factors)
    for old, new in zip(nominal.profiles, truth.profiles, strict=True):
        f = factors[f"{old.model}@{old.accelerator}"]
        # A factor scales time: a rate is divided by it, a step multiplied.
        assert new.prefill_tokens_per_s == pytest.approx(
            old.prefill_tokens_per_s / f["prefill_tokens_per_s"], rel=1e-4
        )
        assert new.decode_step_ms == pytest.approx(old.decode_step_ms * f["decode_step_ms"])


def _value(status: str, nominal: float, fitted: float) -> dict[str, Any]:
    return {"status": status, "nominal": nominal, "fitted": fitted, "samples": 100,
            "interval": None, "identifiability": {"relative_ci": None}}  # fmt: skip


def test_each_value_is_judged_against_the_truth_when_pinned_and_against_nominal_when_not() -> None:
    nominal = load_topology(HELDOUT_DIR / f"{FLEET}.yaml")
    first = nominal.profiles[0]
    truth = truth_of(
        nominal,
        {
            f"{p.model}@{p.accelerator}": {
                "prefill_tokens_per_s": 1.25,
                "decode_step_ms": 1.25,
                "decode_step_ms_per_seq": 1.0,
            }
            for p in nominal.profiles
        },
    )
    x, s, c = first.prefill_tokens_per_s, first.decode_step_ms, first.decode_step_ms_per_seq
    report: dict[str, Any] = {
        "profiles": [
            {
                "model": first.model,
                "accelerator": first.accelerator,
                "ttft_rows": {"queue_free": 80, "queued": 20},
                "values": {
                    # within 10% of the truth (x / 1.25), off it by 20%, unpinned but moved
                    "prefill_tokens_per_s": _value("fitted", x, x / 1.25 * 1.05),
                    "decode_step_ms": _value("agrees_with_nominal", s, s),
                    "decode_step_ms_per_seq": _value("not_identifiable", c, c * 1.2),
                },
            }
        ]
    }
    classes = {v["value"]: v["class"] for v in judge(report, truth)}
    assert classes == {
        "prefill_tokens_per_s": "recovered",
        "decode_step_ms": "missed",
        "decode_step_ms_per_seq": "moved",
    }
    report["profiles"][0]["values"]["decode_step_ms_per_seq"] = _value("insufficient_data", c, c)
    assert judge(report, truth)[2]["class"] == "kept"


def test_a_tiny_cell_runs_end_to_end_and_a_rerun_keeps_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "grid.json"
    argv = ["--fleets", FLEET, "--traffic", "spread", "--utilisations", "0.6", "--limit", "300",
            "--truth-seeds", "26", "--out", str(out)]  # fmt: skip
    assert twin_suite.main(argv) == 0
    cells = json.loads(out.read_text())
    assert list(cells) == [f"{FLEET}|26|spread|0.6"]
    cell = cells[f"{FLEET}|26|spread|0.6"]
    nominal = load_topology(HELDOUT_DIR / f"{FLEET}.yaml")
    assert len(cell["values"]) == 3 * len(nominal.profiles)
    assert {v["class"] for v in cell["values"]} <= {"recovered", "missed", "kept", "moved"}
    assert cell["factors"] == truth_factors(nominal, FLEET, 26)
    assert cell["verdict"]["verdict"] in ("improved", "no_improvement")
    row = f"| {FLEET} | mooncake_synthetic | spread (least-loaded) | 0.6 | 1 |"
    assert row in capsys.readouterr().out
    written = out.read_text()
    assert twin_suite.main(argv) == 0
    assert out.read_text() == written
