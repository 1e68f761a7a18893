"""The exploration probe end to end (issue #26, docs/twin.md "Exploration probe"): proposed
from a calibration that could not see a profile, approved by a second person and started
through the API, it answers about its share of real decisions (`POST /api/v1/placements`)
with the under-observed node, only where the hard constraints and the SLO allow, and stops
by itself once it has sent its budget."""

from __future__ import annotations

from typing import Any

import pytest

from console.placement.engine.runtime import Runtime, runtime
from console.placement.models import DecisionRecord
from console.policies.canary import arm_stats
from console.twin.models import ExplorationProbe
from console.twin.probe_services import probe_check
from optimizer.topology_files import parse_topology
from tests.console.twin.probe_fleet import A10S, LONG, PROBE_FLEET, SHORT, calibration_run, idle

pytestmark = pytest.mark.django_db


@pytest.fixture
def probe_engine(db: Any, engine_settings: Any) -> Runtime:
    from console.inventory.services import topology_import

    topology_import(topology=parse_topology(PROBE_FLEET))
    rt = runtime()
    rt.refresh()
    return rt


def _post(client: Any, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, body, format="json")


def _running(client_for: Any, body: dict[str, Any]) -> tuple[int, Any]:
    """A probe proposed by one admin, approved by another and started by the first."""
    proposer, approver = client_for("admin"), client_for("admin")
    created = _post(proposer, "/api/v1/probes", {"reason": "see the A10s", **body})
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    approved = _post(approver, f"/api/v1/probes/{pk}/approve", {"reason": "small and bounded"})
    assert approved.status_code == 200, approved.content
    started = _post(proposer, f"/api/v1/probes/{pk}/start", {"reason": "go"})
    assert started.status_code == 200, started.content
    assert started.json()["state"] == "running"
    return pk, proposer


def _decide(rt: Runtime, service: Any, body: dict[str, Any], n: int) -> list[dict[str, Any]]:
    answers = []
    for i in range(n):
        idle(rt)
        response = _post(service, "/api/v1/placements", {**body, "session_id": f"s-{i}"})
        assert response.status_code == 200, response.content
        answers.append(response.json())
    return answers


def test_a_probe_sends_its_share_then_stops(
    probe_engine: Runtime, client_for: Any, engine_settings: Any
) -> None:
    service = client_for("service")
    # Before any probe the policy never sends Munich's short requests to the A10.
    before = _decide(probe_engine, service, SHORT, 200)
    assert not {a["node"] for a in before} & A10S
    assert all("probe" not in a for a in before)

    run = calibration_run()
    pk, _ = _running(client_for, {"calibration_run": run.pk, "share": 0.05, "max_requests": 40})
    probe = ExplorationProbe.objects.get(pk=pk)
    # The run's report could not fit llama@a10g: both A10s are targets, and say so.
    assert sorted(t["node"] for t in probe.targets) == sorted(A10S)
    assert {t["profile_status"] for t in probe.targets} == {"insufficient_data"}
    assert probe.min_observations == run.min_samples

    answers = _decide(probe_engine, service, SHORT, 1400)
    probed = [i for i, a in enumerate(answers) if "probe" in a]
    # It sent exactly its budget, each to the EU A10 (the US one breaks residency), with the
    # policy's own pick as the first fallback.
    assert len(probed) == 40
    for i in probed:
        a = answers[i]
        assert a["node"] == "fra-a10-1"
        assert a["probe"]["id"] == pk and a["probe"]["node"] == "fra-a10-1"
        assert a["probe"]["policy_pick"] in {"fra-h100-1", "fra-h100-2"}
        assert a["fallbacks"][0] == a["probe"]["policy_pick"]
        assert a["probe"]["ttft_ms"] <= a["probe"]["ttft_target_ms"] == 800.0
    # At about its share: 40 at 5% is 800 decisions (binomial: 4 sd is about 180).
    assert 600 <= probed[-1] <= 1000
    assert 0.03 <= len([i for i in probed if i < 600]) / 600 <= 0.07
    # Then decisions are the policy's again.
    after = answers[probed[-1] + 1 :]
    assert len(after) > 300
    assert all("probe" not in a and a["node"] not in A10S for a in after)

    # The receipts say so; the canary's figures leave the probe's decisions out.
    probe_engine.recorder.flush()
    records = DecisionRecord.objects.filter(probe=pk)
    assert records.count() == 40
    assert DecisionRecord.objects.filter(receipt__probe__id=pk).count() == 40
    record = records.first()
    assert record is not None and record.receipt["candidates"][0]["node"] == "fra-a10-1"
    listed = client_for("viewer").get(f"/api/v1/decisions/{record.id}").json()
    assert listed["probe"] == pk and listed["receipt"]["probe"]["policy_pick"] in {
        "fra-h100-1",
        "fra-h100-2",
    }
    for r in DecisionRecord.objects.all():
        probe_engine.record_outcome(
            r.id, ok=True, ttft_ms=100.0, e2e_ms=1000.0, caller=r.decided_by
        )
    probe_engine.recorder.flush()
    stats = arm_stats(record.created_at.replace(year=2000))
    assert stats["active"].outcomes == DecisionRecord.objects.count() - 40

    # The check records that it completed; the engine's snapshot stops carrying it.
    assert "sent its budget of 40" in probe_check()
    body = client_for("viewer").get(f"/api/v1/probes/{pk}").json()
    assert body["state"] == "completed" and body["sent"] == 40
    assert [t["action"] for t in body["transitions"]] == ["propose", "approve", "start", "complete"]
    assert body["transitions"][-1]["actor"] == "system"
    probe_engine.refresh()
    assert probe_engine.engine.snapshot is not None and probe_engine.engine.snapshot.probe is None


@pytest.fixture
def lasting_breakers(engine_settings: Any) -> None:
    """A tripped breaker stays open for the test (the engine's fixture opens for 0.2 s)."""
    engine_settings.LOCUS_BREAKER = {**engine_settings.LOCUS_BREAKER, "open_s": 3600.0}


def test_the_probe_sends_only_where_the_slo_and_constraints_allow(
    lasting_breakers: None, probe_engine: Runtime, client_for: Any
) -> None:
    service = client_for("service")
    pk, _ = _running(
        client_for, {"nodes": ["fra-a10-1", "use-a10-1"], "share": 0.05, "max_requests": 1000}
    )
    snap = probe_engine.engine.snapshot
    assert snap is not None and snap.probe is not None and snap.probe.probe_id == pk
    # A long prompt's estimated TTFT on the A10 is over the SLO's 800 ms: never probed.
    assert all("probe" not in a for a in _decide(probe_engine, service, LONG, 300))
    # Short ones are, to the EU A10 only (the US one breaks residency) ...
    probed = [a for a in _decide(probe_engine, service, SHORT, 300) if "probe" in a]
    assert probed and {a["node"] for a in probed} == {"fra-a10-1"}
    # ... until its breaker trips: out of the candidates, it is never probed.
    probe_engine.breakers.force_open("fra-a10-1", "test")
    assert all("probe" not in a for a in _decide(probe_engine, service, SHORT, 300))
