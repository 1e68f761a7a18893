"""The Twin page in a real browser: recorded traffic calibrated by an operator, the fidelity
and the predicted-against-observed plot shown, the proposal applied with a reason and audited,
a proposal that does not improve the held-out errors applied only with the override, a
proposal's link bandwidth shown and applied to the inventory's link, and a viewer who may only
look."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import expect

from optimizer.arrivals import draw_requests
from optimizer.calibration.replay import all_active, predicted, replay
from optimizer.observations import load_observations
from optimizer.topology import Topology
from optimizer.topology_files import load_topology, parse_topology
from optimizer.traces import load_trace
from tests.conftest import CONTRACT_EXAMPLE, REPO, TRACES
from tests.e2e.conftest import Console, api_call, sign_in

pytestmark = pytest.mark.e2e

REQUESTS = 200


def _truth(slower: float = 1.3) -> Topology:
    """The example fleet as it really runs: its L4 `slower` times slower than the file says."""
    data = yaml.safe_load(CONTRACT_EXAMPLE.read_text())
    for profile in data["profiles"]:
        if profile["accelerator"] == "l4" and slower != 1.0:
            profile["prefill_tokens_per_s"] /= slower
            profile["decode_step_ms"] *= slower
            profile["decode_step_ms_per_seq"] *= slower
    return all_active(parse_topology(yaml.safe_dump(data)))


def _record_traffic(page, url: str, key: str, tmp_path: Path, truth: Topology) -> None:  # type: ignore[no-untyped-def]
    """Decisions through the API for a real trace, then the outcomes the true fleet gives when
    it serves them where the console sent them (the optimizer's replay on recorded nodes)."""
    trace = load_trace(TRACES / "azure_llm_2023_conv.csv", limit=REQUESTS)
    requests = draw_requests(trace, load_topology(CONTRACT_EXAMPLE), seed=1)
    bodies = [
        {
            "model": r.model,
            "source": r.source,
            "prompt_tokens": r.prompt_tokens,
            "max_output_tokens": r.max_output_tokens,
            "prefix_hashes": list(r.prefix_hashes),
        }
        for r in requests
    ]
    answer = api_call(url, key, "POST", "/api/v1/placements:batch", {"requests": bodies})
    ours = {d["decision_id"] for d in answer["decisions"]}
    time.sleep(1.5)  # the recorder writes in the background
    listed = page.request.get("/api/v1/decisions?limit=1000").json()["results"]
    records = [r for r in listed if r["id"] in ours]
    assert len(records) == REQUESTS
    records.sort(key=lambda r: (r["created_at"], r["id"]))  # the export's order
    observed = tmp_path / "decided.jsonl"
    observed.write_text(
        "".join(
            json.dumps(
                {"timestamp": datetime.fromisoformat(r["created_at"]).timestamp() * 1e3,
                 "input_length": r["prompt_tokens"], "output_length": r["max_output_tokens"],
                 "source": r["source"], "model": r["model"], "node": r["node"],
                 "ttft_ms": None, "e2e_ms": None, "ok": False}
            ) + "\n"
            for r in records
        )
    )  # fmt: skip
    ttft, e2e = predicted(replay(truth, load_observations(observed, truth)))
    for record, first, last in zip(records, ttft, e2e, strict=True):
        api_call(
            url, key, "POST", f"/api/v1/placements/{record['id']}/outcome",
            {"ttft_ms": float(first) * 1e3, "e2e_ms": float(last) * 1e3, "ok": True},
        )  # fmt: skip


def test_an_operator_calibrates_and_applies_the_proposal(  # type: ignore[no-untyped-def]
    page, screenshots, console_url: str, service_key: str, tmp_path: Path
) -> None:
    sign_in(page, "otto")
    _record_traffic(page, console_url, service_key, tmp_path, _truth())
    page.get_by_role("link", name="Twin").click()
    form = page.get_by_role("form", name="Calibrate against recorded traffic")
    form.get_by_label("Last hours").fill("1")
    form.get_by_label("Min samples per profile").fill("20")
    earlier = page.request.get("/api/v1/calibration-runs").json()["count"]
    form.get_by_role("button", name="Start calibration").click()

    rows = page.get_by_test_id("calibration-runs").locator("tr[data-run]")
    expect(rows).to_have_count(earlier + 1)
    expect(rows.first).to_contain_text("succeeded", timeout=60_000)
    detail = page.get_by_test_id("calibration-detail")
    expect(detail.get_by_test_id("fidelity").locator("tr[data-metric=ttft]")).to_be_visible()
    expect(detail.get_by_test_id("scatter").locator("canvas")).to_be_visible()
    l4 = detail.get_by_test_id("profiles").locator("tr[data-profile='llama-3.1-8b@l4']")
    expect(l4).not_to_contain_text("too little data")
    report = page.request.get("/api/v1/calibration-runs").json()["results"][0]["report"]
    fidelity = report["fidelity"]
    # Never worse; not always better: with 200 requests (150 fitted) the L4's values may not be
    # pinned within the twin's ±5%, and then they stay as the file says (docs/twin.md,
    # identifiability), leaving the error where it was.
    assert (
        fidelity["after"]["e2e"]["median_abs_rel_error"]
        <= fidelity["before"]["e2e"]["median_abs_rel_error"]
    )
    screenshots.take(page, "twin")

    verdict = page.request.get("/api/v1/calibration-runs").json()["results"][0]["verdict"]
    expect(detail.get_by_test_id("verdict")).to_have_attribute("data-verdict", verdict["verdict"])
    detail.get_by_label("Reason").fill("the edge runs slower than its datasheet")
    if verdict["verdict"] != "improved":  # 200 requests: the hold-out may not show it
        detail.get_by_test_id("override").get_by_role("checkbox").check()
    detail.get_by_role("button", name="Apply to inventory").click()
    audit = detail.get_by_test_id("audit")
    expect(audit).to_contain_text("by otto: the edge runs slower than its datasheet")
    expect(detail.get_by_test_id("proposal")).to_have_count(0)


def test_a_proposal_without_improvement_takes_the_override(  # type: ignore[no-untyped-def]
    page, console_url: str, service_key: str, tmp_path: Path
) -> None:
    """The fleet runs exactly as the inventory says: calibration finds nothing to improve, the
    page says so, Apply stays disabled until the override is ticked, and the audit says it
    was applied over the verdict, by whom."""
    sign_in(page, "otto")
    _record_traffic(page, console_url, service_key, tmp_path, _truth(1.0))
    page.goto("/twin")
    form = page.get_by_role("form", name="Calibrate against recorded traffic")
    # The last 36 s: this test's traffic only, not the slower fleet's the test before
    # recorded (it then calibrated, checked the page and applied, which takes longer).
    form.get_by_label("Last hours").fill("0.01")
    form.get_by_label("Min samples per profile").fill("20")
    earlier = page.request.get("/api/v1/calibration-runs").json()["count"]
    form.get_by_role("button", name="Start calibration").click()
    rows = page.get_by_test_id("calibration-runs").locator("tr[data-run]")
    expect(rows).to_have_count(earlier + 1)
    expect(rows.first).to_contain_text("succeeded", timeout=60_000)
    detail = page.get_by_test_id("calibration-detail")
    expect(detail.get_by_test_id("verdict")).to_have_attribute("data-verdict", "no_improvement")
    apply = detail.get_by_role("button", name="Apply to inventory")
    detail.get_by_label("Reason").fill("checking the override")
    expect(apply).to_be_disabled()
    detail.get_by_test_id("override").get_by_role("checkbox").check()
    expect(apply).to_be_enabled()
    apply.click()
    audit = detail.get_by_test_id("audit")
    expect(audit).to_contain_text("over a “no improvement” verdict by otto: checking the override")


def test_a_viewer_sees_the_twin_but_no_controls(page) -> None:  # type: ignore[no-untyped-def]
    sign_in(page, "vera")
    page.goto("/twin")
    expect(page.get_by_role("heading", name="Twin")).to_be_visible()
    expect(page.get_by_role("button", name="Start calibration")).to_have_count(0)
    expect(page.get_by_role("button", name="Apply to inventory")).to_have_count(0)


# A succeeded run whose report says the muc-edge–fra-core link carries 4.99 Gb/s, not its
# nominal 10, and that too few transfers crossed fra-core–use-cloud to tell. Written straight
# into the server's database: the example fleet has no prefill or decode nodes, so no traffic
# through it is split (the API test with real split traffic is
# tests/console/twin/test_link_proposal.py); this test is about the page.
_LINK_RUN = """
from datetime import UTC, datetime, timedelta

import django
django.setup()
from console.twin.models import CalibrationRun

def bandwidth(fitted, interval, samples, status):
    return {"nominal": 10.0 if fitted < 10 else fitted, "fitted": fitted, "interval": interval,
            "samples": samples, "status": status}

errors = {"ttft": {"median_abs_rel_error": 0.4, "p95_abs_rel_error": 0.6},
          "e2e": {"median_abs_rel_error": 0.01, "p95_abs_rel_error": 0.02}}
better = {"ttft": {"median_abs_rel_error": 0.01, "p95_abs_rel_error": 0.02},
          "e2e": {"median_abs_rel_error": 0.01, "p95_abs_rel_error": 0.02}}
rtt = {"nominal": 9.0, "fitted": 9.0, "interval": None, "samples": 300}
now = datetime.now(UTC)
run = CalibrationRun.objects.create(
    since=now - timedelta(hours=1), until=now, min_samples=50, status="succeeded",
    proposal="pending", requested_by_name="system", observations=600,
    report={"profiles": [], "fidelity": {"before": errors, "after": better},
            "verdict": {"verdict": "improved", "reason": "every held-out error is lower",
                        "worse": [], "held_out": 150},
            "links": [
                {"a": "muc-edge", "b": "fra-core", "status": "not_fitted", "samples": 300,
                 "values": {"rtt_ms": rtt,
                            "bandwidth_gbps": bandwidth(4.99, [4.98, 5.0], 302, "fitted")}},
                {"a": "fra-core", "b": "use-cloud", "status": "not_fitted", "samples": 20,
                 "values": {"rtt_ms": {**rtt, "nominal": 88.0, "fitted": 88.0},
                            "bandwidth_gbps": bandwidth(100.0, None, 12, "insufficient_data")}},
            ]},
)
print(run.pk)
"""

# Put the link back as the example fleet has it, through save() so the revision moves.
_RESTORE = """
import django
django.setup()
from console.inventory.models import Link

for link in Link.objects.filter(site_a__name__in=("muc-edge", "fra-core"),
                                site_b__name__in=("muc-edge", "fra-core")):
    link.bandwidth_gbps = 10.0
    link.save(update_fields=["bandwidth_gbps"])
"""


def _server_python(console: Console, code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=console.env, check=True,
        capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


def _muc_fra_gbps(page) -> float:  # type: ignore[no-untyped-def]
    links = page.request.get("/api/v1/topology").json()["links"]
    (gbps,) = [
        lk["bandwidth_gbps"] for lk in links if {lk["a"], lk["b"]} == {"muc-edge", "fra-core"}
    ]
    return float(gbps)


def test_a_proposal_shows_and_applies_a_link_bandwidth(  # type: ignore[no-untyped-def]
    page, console: Console
) -> None:
    run_id = int(_server_python(console, _LINK_RUN))
    try:
        sign_in(page, "otto")
        assert _muc_fra_gbps(page) == 10.0
        page.goto(f"/twin?run={run_id}")
        detail = page.get_by_test_id("calibration-detail")
        links = detail.get_by_test_id("links")
        fitted = links.locator("tr[data-link='muc-edge–fra-core']")
        expect(fitted).to_contain_text("10.0 → 4.99")
        expect(fitted).to_contain_text("302")
        kept = links.locator("tr[data-link='fra-core–use-cloud']")
        expect(kept).to_contain_text("too few transfers: kept")
        proposal = detail.get_by_test_id("proposal")
        expect(proposal).to_contain_text("0 profile values, 1 link bandwidths")
        detail.get_by_label("Reason").fill("the edge link runs at half its rate")
        detail.get_by_role("button", name="Apply to inventory").click()
        expect(detail.get_by_test_id("audit")).to_contain_text(
            "by otto: the edge link runs at half its rate"
        )
        assert _muc_fra_gbps(page) == 4.99
    finally:
        _server_python(console, _RESTORE)
