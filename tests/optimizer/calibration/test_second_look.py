"""second_look.py: a prefill rate held for want of queue-free TTFT rows gets a second fit,
accepted only when no held-out error gets worse (issue #26, "a twin that never does harm").

The blind spot: a row is queue-free only when the replay's own prefill is at least
design.OWN_SHARE of the observed TTFT, judged at the rate's current value, so a profile whose
true prefill takes more than 1 / OWN_SHARE (1.18x) the nominal time has no such row at
nominal. On the demo fleet (`fleet-demo-truth.yaml`: llama-3.1-8b on H100 1.2x slower) under
light spread traffic, the first fit holds that rate at nominal with 0 queue-free rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import optimizer.calibration.second_look as second_look
from optimizer.calibration import calibrate
from optimizer.calibration.scenarios import Scenario, observe
from optimizer.observations import Observations
from optimizer.topology import Topology
from optimizer.topology_files import load_topology
from tests.optimizer.calibration.test_fit import SLOW_QUEUE, _case
from tests.optimizer.fleets import AZURE, FLEET_DEMO, REPO

SLOW = ("llama-3.1-8b", "h100")
TRUE_RATE = 15000.0  # fleet-demo-truth.yaml; nominal 18,000


def _light(tmp_path: Path) -> tuple[Topology, Observations]:
    nominal = load_topology(FLEET_DEMO)
    truth = load_topology(REPO / "optimizer" / "topologies" / "fleet-demo-truth.yaml")
    scenario = Scenario(str(AZURE), "spread", 0.1, limit=1500)
    return nominal, observe(nominal, truth, scenario, tmp_path / "obs.jsonl")


def _rate(report: dict[str, Any]) -> dict[str, Any]:
    entry = next(e for e in report["profiles"] if (e["model"], e["accelerator"]) == SLOW)
    value: dict[str, Any] = entry["values"]["prefill_tokens_per_s"]
    return value


def test_a_slow_prefill_rate_on_light_traffic_is_fitted(tmp_path: Path) -> None:
    nominal, observations = _light(tmp_path)
    report = calibrate(nominal, observations).report
    looked = report["second_look"]
    assert looked["accepted"] and "llama-3.1-8b@h100" in looked["freed"], looked
    # The first fit had no queue-free row of it: that is the blind spot.
    assert looked["first_queue_free_rows"]["llama-3.1-8b@h100"] == 0
    assert looked["worse"] == []
    value = _rate(report)
    assert value["status"] == "fitted"
    assert value["fitted"] == pytest.approx(TRUE_RATE, rel=0.10)
    assert "second fit" in value["reason"]
    assert report["verdict"]["verdict"] == "improved"


def test_without_the_second_look_the_rate_is_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same data with rows judged at no longer prefill time than the current one: the
    rate stays at nominal, not pinned down."""
    nominal, observations = _light(tmp_path)
    monkeypatch.setattr(second_look, "MAX_OWN_FACTOR", 1.0)
    report = calibrate(nominal, observations).report
    assert not report["second_look"]["accepted"]
    value = _rate(report)
    assert value["status"] == "not_identifiable"
    assert value["fitted"] == value["nominal"] == 18000.0


def test_a_rate_held_on_overloaded_traffic_stays_held(tmp_path: Path) -> None:
    """The case of test_fit.py (a 70B H100 rate seen only queued): the second look does not
    move it."""
    nominal, _, observations = _case(tmp_path)
    report = calibrate(nominal, observations).report
    assert not report["second_look"]["accepted"]
    entry = next(e for e in report["profiles"] if (e["model"], e["accelerator"]) == SLOW_QUEUE)
    value = entry["values"]["prefill_tokens_per_s"]
    assert value["status"] == "not_identifiable" and value["fitted"] == value["nominal"]
