"""A calibration over split decisions proposes the link bandwidths their KV transfers pinned
down (issue #30), and applying the proposal sets them on the inventory's links, where the next
topology export and the next engine snapshot read them; a bandwidth the data cannot pin down
is not proposed.

The inventory holds the nominal EU P/D fleet; the traffic was served by its truth, whose edge
links carry half their nominal 10 Gb/s (`tests/optimizer/calibration/split_truth.py`), and is
recorded as the console records decisions and their outcomes."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from console.inventory.models import Link
from console.placement.engine.runtime import Runtime, runtime
from console.placement.models import DecisionRecord
from console.twin.models import CalibrationRun, ProposalDecision
from optimizer.topology import Topology
from tests.optimizer.calibration.split_truth import BANDWIDTH_FACTOR, observe, pd_eu_fleet

EDGE_LINKS = {frozenset(("muc-edge", "fra-core")), frozenset(("ams-edge", "fra-core"))}
EDGE_TO_EDGE = frozenset(("muc-edge", "ams-edge"))  # no KV crosses it: nothing to fit
NOMINAL_GBPS = 10.0


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """What the truth fleet served (2,000 Mooncake requests, about half of them split), as
    observation records with arrival times in milliseconds from the start."""
    path = tmp_path_factory.mktemp("split") / "obs.jsonl"
    observe(pd_eu_fleet(), pd_eu_fleet(BANDWIDTH_FACTOR), path)
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def pd_engine(db: Any, engine_settings: Any) -> Runtime:
    """The nominal EU P/D fleet in the inventory, the engine refreshed."""
    from console.inventory.services import topology_import

    topology_import(topology=pd_eu_fleet())
    rt = runtime()
    rt.refresh()
    return rt


def _record(observed: list[dict[str, Any]], topology: Topology) -> float:
    """Keep the observed requests as the console's decision records with their outcomes,
    ending a minute ago; return the hours a calibration must look back to cover them."""
    span_s = observed[-1]["timestamp"] / 1000.0
    start = datetime.now(UTC) - timedelta(seconds=span_s + 60.0)
    sites = {s.name: s.site for s in topology.sources}
    DecisionRecord.objects.bulk_create(
        DecisionRecord(
            id=f"{i:032x}",
            created_at=start + timedelta(milliseconds=o["timestamp"]),
            source=o["source"],
            source_site=sites[o["source"]],
            model=o["model"],
            slo=o["slo"] or "",
            prompt_tokens=o["input_length"],
            max_output_tokens=o["output_length"],
            prefix_hashes=o["hash_ids"],
            node=o["node"],
            node_site=topology.node_by_name[o["node"]].site,
            prefill_node=o.get("prefill_node") or "",
            policy_name="weighted-score",
            policy_version="builtin",
            latency_us=100.0,
            ttft_ms=o["ttft_ms"],
            e2e_ms=o["e2e_ms"],
            ok=o["ok"],
        )
        for i, o in enumerate(observed)
        if o["node"] is not None
    )
    return math.ceil((span_s + 120.0) / 360.0) / 10.0  # whole tenths of an hour


def _calibrate(client_for: Any, capture: Any, hours: float, min_samples: int) -> dict[str, Any]:
    with capture(execute=True):
        started = client_for("operator").post(
            "/api/v1/calibration-runs", {"hours": hours, "min_samples": min_samples}, format="json"
        )
    assert started.status_code == 202, started.content
    run: dict[str, Any] = (
        client_for("viewer").get(f"/api/v1/calibration-runs/{started.json()['id']}").json()
    )
    assert run["status"] == "succeeded", run["error"]
    return run


def _exported_gbps(client: Any) -> dict[frozenset[str], float]:
    topology = client.get("/api/v1/topology").json()
    return {frozenset((lk["a"], lk["b"])): lk["bandwidth_gbps"] for lk in topology["links"]}


def test_a_split_calibration_proposes_the_bandwidth_and_applying_it_sets_the_link(
    pd_engine: Runtime,
    observed: list[dict[str, Any]],
    client_for: Any,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
    tmp_path: Path,
) -> None:
    settings.LOCUS_ARTIFACTS_DIR = tmp_path / "artifacts"
    hours = _record(observed, pd_eu_fleet())
    run = _calibrate(client_for, django_capture_on_commit_callbacks, hours, 50)
    assert run["verdict"]["verdict"] == "improved", run["verdict"]
    assert any(o.get("prefill_node") for o in observed)

    proposed = {frozenset((c["a"], c["b"])): c for c in run["link_changes"]}
    assert set(proposed) == EDGE_LINKS
    for change in proposed.values():
        assert change["field"] == "bandwidth_gbps" and change["nominal"] == NOMINAL_GBPS
        assert change["fitted"] == pytest.approx(NOMINAL_GBPS * BANDWIDTH_FACTOR, rel=0.1)
        low, high = change["interval"]
        assert low <= change["fitted"] <= high
        assert change["samples"] >= 50
    viewer = client_for("viewer")
    assert set(_exported_gbps(viewer).values()) == {NOMINAL_GBPS}
    revision = pd_engine.engine.snapshot.inventory_revision  # type: ignore[union-attr]

    applied = client_for("operator").post(
        f"/api/v1/calibration-runs/{run['id']}/apply",
        {"reason": "the edge links run at half their rate"},
        format="json",
    )
    assert applied.status_code == 200, applied.content
    exported = _exported_gbps(viewer)
    for pair, change in proposed.items():
        link = Link.objects.get(site_a__name__in=pair, site_b__name__in=pair)
        assert link.bandwidth_gbps == change["fitted"]
        assert exported[pair] == change["fitted"]
    assert exported[EDGE_TO_EDGE] == NOMINAL_GBPS
    # The inventory's revision moved: the next snapshot rebuilds the topology and reads them.
    assert pd_engine.refresh(reuse_topology=True)
    snapshot = pd_engine.engine.snapshot
    assert snapshot is not None and snapshot.inventory_revision > revision
    for pair, change in proposed.items():
        a, b = sorted(pair)
        served = snapshot.topology.link(a, b)
        assert served is not None and served.bandwidth_gbps == change["fitted"]

    audit = ProposalDecision.objects.get(run_id=run["id"])
    assert audit.action == "applied" and not audit.override
    audited = {frozenset((c["a"], c["b"])): c for c in audit.changes if "a" in c}
    assert audited == proposed
    assert applied.json()["changes"] == audit.changes


def test_a_bandwidth_the_data_cannot_pin_down_is_not_proposed(
    pd_engine: Runtime,
    observed: list[dict[str, Any]],
    client_for: Any,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
    tmp_path: Path,
) -> None:
    """With 400 samples asked of every value, the ~300 transfers over each edge link are too
    few: its bandwidth is reported (insufficient_data, kept at nominal) but not proposed, and
    applying the proposal leaves every link as it was."""
    settings.LOCUS_ARTIFACTS_DIR = tmp_path / "artifacts"
    hours = _record(observed, pd_eu_fleet())
    run = _calibrate(client_for, django_capture_on_commit_callbacks, hours, 400)
    reported = {
        frozenset((lk["a"], lk["b"])): lk["values"]["bandwidth_gbps"]
        for lk in run["report"]["links"]
        if "bandwidth_gbps" in lk["values"]
    }
    assert set(reported) == EDGE_LINKS
    assert all(v["status"] == "insufficient_data" for v in reported.values())
    assert run["link_changes"] == []

    applied = client_for("operator").post(
        f"/api/v1/calibration-runs/{run['id']}/apply",
        {"reason": "apply what there is", "override": True},
        format="json",
    )
    assert applied.status_code == 200, applied.content
    assert set(_exported_gbps(client_for("viewer")).values()) == {NOMINAL_GBPS}
    assert not any("a" in c for c in ProposalDecision.objects.get(run_id=run["id"]).changes)


def _crafted(status: str, verdict: str = "improved") -> CalibrationRun:
    """A succeeded run whose report proposes the muc-edge–fra-core link at 5 Gb/s with the
    bandwidth's `status`, and the given verdict."""
    value = {
        "nominal": NOMINAL_GBPS,
        "fitted": 5.0,
        "interval": [4.9, 5.1],
        "samples": 300,
        "status": status,
    }
    rtt = {"nominal": 9.0, "fitted": 9.0, "interval": None, "samples": 300}
    link = {"a": "muc-edge", "b": "fra-core", "status": "not_fitted", "samples": 300}
    now = datetime.now(UTC)
    return CalibrationRun.objects.create(
        since=now - timedelta(hours=1),
        until=now,
        min_samples=50,
        status="succeeded",
        proposal="pending",
        requested_by_name="system",
        report={
            "profiles": [],
            "links": [{**link, "values": {"rtt_ms": rtt, "bandwidth_gbps": value}}],
            "verdict": {"verdict": verdict, "reason": "crafted", "worse": [], "held_out": 100},
        },
    )


def _muc_fra() -> float:
    pair = ("muc-edge", "fra-core")
    return Link.objects.get(site_a__name__in=pair, site_b__name__in=pair).bandwidth_gbps


@pytest.mark.parametrize("status", ["not_identifiable", "agrees_with_nominal", "insufficient_data"])
def test_only_a_fitted_bandwidth_is_proposed(
    pd_engine: Runtime, client_for: Any, status: str
) -> None:
    viewer = client_for("viewer")
    assert viewer.get(f"/api/v1/calibration-runs/{_crafted('fitted').pk}").json()[
        "link_changes"
    ] == [
        {
            "a": "muc-edge",
            "b": "fra-core",
            "field": "bandwidth_gbps",
            "nominal": NOMINAL_GBPS,
            "fitted": 5.0,
            "interval": [4.9, 5.1],
            "samples": 300,
        }
    ]
    assert (
        viewer.get(f"/api/v1/calibration-runs/{_crafted(status).pk}").json()["link_changes"] == []
    )


def test_a_bandwidth_without_improvement_needs_an_override(
    pd_engine: Runtime, client_for: Any
) -> None:
    run, operator = _crafted("fitted", "no_improvement"), client_for("operator")
    url = f"/api/v1/calibration-runs/{run.pk}/apply"
    refused = operator.post(url, {"reason": "go"}, format="json")
    assert refused.status_code == 409 and "override" in refused.json()["errors"]
    assert _muc_fra() == NOMINAL_GBPS
    assert operator.post(url, {"reason": "go", "override": True}, format="json").status_code == 200
    assert _muc_fra() == 5.0
    assert ProposalDecision.objects.get(run=run).override


def test_a_link_changed_since_the_run_is_not_overwritten(
    pd_engine: Runtime, client_for: Any
) -> None:
    run = _crafted("fitted")
    pair = ("muc-edge", "fra-core")
    Link.objects.filter(site_a__name__in=pair, site_b__name__in=pair).update(bandwidth_gbps=8.0)
    answer = client_for("operator").post(
        f"/api/v1/calibration-runs/{run.pk}/apply", {"reason": "go"}, format="json"
    )
    assert answer.status_code == 409
    assert answer.json()["errors"]["links"] == ["muc-edge-fra-core.bandwidth_gbps"]
    assert _muc_fra() == 8.0
    assert CalibrationRun.objects.get(pk=run.pk).proposal == "pending"
