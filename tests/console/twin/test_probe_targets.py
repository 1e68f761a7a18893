"""What an exploration probe targets, from a real calibration report (issue #26; docs/twin.md,
"Exploration probe"): a profile whose prefill rate the run held for too few queue-free TTFT
rows while its decode terms moved is `fitted` as a whole, yet its prefill rate is exactly what
more light-load requests would pin down. Proposed through the API, the probe targets its
nodes, says why, and then sends to them.

The report is the twin suite's cell `sovereign-eu-us|27|concentrated|0.6`
(docs/results/reports/twin-suite/grid.json), recalibrated here: the sovereign fleet's
perturbed truth (seed 27) serving 2,500 Mooncake requests placed by weighted-score at 0.6 of
its capacity, calibrated from the nominal fleet without the second look at held rates
(second_look.py, off with MAX_OWN_FACTOR 1): so it holds llama-3.1-8b@l40s's prefill rate (none
of its TTFT rows queue-free) while its decode step is fitted; every other profile is fitted or
agrees with nominal, so no profile's status is under-observed. (With the second look that cell
fits the rate; a run stores such a report where the second look is not accepted.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

import optimizer.calibration.second_look as second_look
from console.placement.engine.runtime import Runtime, runtime
from console.placement.models import DecisionRecord
from console.twin.choices import ProposalState, RunStatus
from console.twin.models import CalibrationRun, ExplorationProbe
from optimizer.calibration import calibrate
from optimizer.calibration.scenarios import Scenario, observe
from optimizer.heldout.guard import HELDOUT_DIR
from optimizer.topology import Topology
from optimizer.topology_files import load_topology
from optimizer.traces import SHIPPED_TRACES
from tests.console.twin.probe_fleet import idle
from tools.twin_suite import truth_factors, truth_of

pytestmark = pytest.mark.django_db

FLEET = "sovereign-eu-us"
HELD = ("llama-3.1-8b", "l40s")
# The fleet's L40S nodes: every one serves llama-3.1-8b.
L40S = {"mad-l40s-8b-1", "mad-l40s-8b-2", "lon-l40s-8b", "dal-l40s-8b-1", "dal-l40s-8b-2"}
# A short interactive request from Washington DC (no residency): its estimate on any L40S
# node is well within the SLO's 8 s TTFT.
SHORT = {
    "model": "llama-3.1-8b",
    "source": "wdc-app",
    "prompt_tokens": 900,
    "max_output_tokens": 100,
}


def _nominal() -> Topology:
    return load_topology(HELDOUT_DIR / f"{FLEET}.yaml")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The cell's calibration report, as the console stores it (JSON)."""
    nominal = _nominal()
    truth = truth_of(nominal, truth_factors(nominal, FLEET, 27))
    scenario = Scenario(
        str(SHIPPED_TRACES / "mooncake_synthetic.jsonl"), "concentrated", 0.6, 2500, 0, 10.0
    )
    out = tmp_path_factory.mktemp("obs") / "observations.jsonl"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(second_look, "MAX_OWN_FACTOR", 1.0)
        result = calibrate(nominal, observe(nominal, truth, scenario, out))
    loaded: dict[str, Any] = json.loads(json.dumps(result.report))
    return loaded


@pytest.fixture
def sovereign_engine(db: Any, engine_settings: Any) -> Runtime:
    from console.inventory.services import topology_import

    topology_import(topology=_nominal())
    rt = runtime()
    rt.refresh()
    return rt


def _run(report: dict[str, Any]) -> CalibrationRun:
    now = timezone.now()
    return CalibrationRun.objects.create(
        since=now,
        until=now,
        min_samples=report["min_samples"],
        status=RunStatus.SUCCEEDED,
        report=report,
        proposal=ProposalState.PENDING,
        requested_by_name="operator-1",
    )


def _post(client: Any, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, body, format="json")


def test_a_held_prefill_rate_beside_fitted_decode_terms_is_probed(
    report: dict[str, Any], sovereign_engine: Runtime, client_for: Any, tmp_path: Path
) -> None:
    # The report is what the module docstring says: the profile is fitted as a whole, its
    # prefill rate held for want of queue-free rows, and no profile is under-observed.
    entry = next(e for e in report["profiles"] if (e["model"], e["accelerator"]) == HELD)
    prefill = entry["values"]["prefill_tokens_per_s"]
    assert entry["status"] == "fitted"
    assert entry["values"]["decode_step_ms"]["status"] == "fitted"
    assert prefill["status"] == "not_identifiable" and prefill["queue_free_rows"] == 0
    assert prefill["fitted"] == prefill["nominal"]
    assert {e["status"] for e in report["profiles"]} <= {"fitted", "agrees_with_nominal"}
    held_elsewhere = [
        (e["model"], e["accelerator"])
        for e in report["profiles"]
        if any(v["status"] not in ("fitted", "agrees_with_nominal") for v in e["values"].values())
    ]
    assert held_elsewhere == [HELD]

    run = _run(report)
    proposer, approver = client_for("admin"), client_for("admin")
    created = _post(
        proposer,
        "/api/v1/probes",
        {"reason": "the L40S prefill rate", "calibration_run": run.pk, "share": 0.05},
    )
    assert created.status_code == 201, created.content
    body = created.json()
    # Every L40S node is a target, and only they: each says its profile was fitted and which
    # values were held, with the report's reason for the prefill rate.
    assert {t["node"] for t in body["targets"]} == L40S
    for target in body["targets"]:
        assert target["model"] == "llama-3.1-8b"
        assert target["profile_status"] == "fitted"
        assert target["held"][0] == {
            "value": "prefill_tokens_per_s",
            "status": "not_identifiable",
            "reason": prefill["reason"],
        }
        assert "0 queue-free TTFT rows" in target["held"][0]["reason"]
        assert [h["value"] for h in target["held"]] == [
            name
            for name, v in entry["values"].items()
            if v["status"] in ("insufficient_data", "not_identifiable")
        ]
        # A held value with no reason in the report reads as an empty one.
        assert all(h["reason"] == "" for h in target["held"][1:])
    stored = ExplorationProbe.objects.get(pk=body["id"]).targets
    assert [(t["node"], t["held"][0]["reason"]) for t in stored] == [
        (t["node"], prefill["reason"]) for t in body["targets"]
    ]

    pk = body["id"]
    approved = _post(approver, f"/api/v1/probes/{pk}/approve", {"reason": "bounded"})
    assert approved.status_code == 200, approved.content
    started = _post(proposer, f"/api/v1/probes/{pk}/start", {"reason": "go"})
    assert started.status_code == 200 and started.json()["state"] == "running"

    # Its share of real decisions goes to an L40S node.
    service = client_for("service")
    nodes = [n.name for n in _nominal().nodes]
    answers = []
    for i in range(400):
        idle(sovereign_engine, nodes)
        answer = _post(service, "/api/v1/placements", {**SHORT, "session_id": f"s-{i}"})
        assert answer.status_code == 200, answer.content
        answers.append(answer.json())
    probed = [a for a in answers if "probe" in a]
    assert probed
    for a in probed:
        assert a["probe"]["id"] == pk
        assert a["node"] == a["probe"]["node"] and a["node"] in L40S
        assert a["probe"]["policy_pick"] not in L40S
    # Outside the probe's share the policy never sends there.
    assert not {a["node"] for a in answers if "probe" not in a} & L40S
    sovereign_engine.recorder.flush()
    assert DecisionRecord.objects.filter(probe=pk).count() == len(probed)
    assert set(DecisionRecord.objects.filter(probe=pk).values_list("node", flat=True)) <= L40S


def test_a_profile_holding_only_its_per_sequence_slope_is_not_probed(
    report: dict[str, Any], sovereign_engine: Runtime, client_for: Any
) -> None:
    # The same report with the L40S prefill rate and base step seen well enough: what is left
    # held is the per-sequence slope, which a probe's lone requests cannot pin (PROBE_PINS).
    changed = json.loads(json.dumps(report))
    entry = next(e for e in changed["profiles"] if (e["model"], e["accelerator"]) == HELD)
    for name in ("prefill_tokens_per_s", "decode_step_ms"):
        entry["values"][name]["status"] = "fitted"
        entry["values"][name].pop("reason", None)
    entry["values"]["decode_step_ms_per_seq"]["status"] = "not_identifiable"
    created = _post(
        client_for("admin"),
        "/api/v1/probes",
        {"reason": "the L40S slope", "calibration_run": _run(changed).pk},
    )
    assert created.status_code == 400, created.content
    assert "nor holds a value a probe can pin" in created.json()["errors"]["calibration_run"][0]
