"""Exploration probes on the Twin page in a real browser (docs/twin.md, "Exploration
probe"): an admin's proposal, refused approval by its own proposer, approved by a second
admin and started from the page; live placements then carry the probe's answers to its node,
and Live decisions marks them with the probe's badge; aborted from the page, it stops, and a
viewer sees it without controls."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.sync_api import expect

from optimizer.decide.pickers.probe import in_probe
from optimizer.decide.state.snapshot import Probe
from tests.e2e.conftest import api_call, sign_in

pytestmark = pytest.mark.e2e

TARGET = "muc-l4-1"
REQUEST = {"model": "llama-3.1-8b", "source": "munich-app", "prompt_tokens": 300,
           "max_output_tokens": 100}  # fmt: skip


def _csrf(page: Any) -> str:
    return str(next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken"))


def _probe_row(page: Any, pk: int) -> Any:
    return page.get_by_test_id("probe-list").locator(f"tr[data-probe='{pk}']")


def _step(page: Any, pk: int, verb: str, reason: str) -> None:
    row = _probe_row(page, pk)
    row.get_by_label(f"Reason for probe {pk}").fill(reason)
    row.get_by_role("button", name=verb).click()


def test_a_probe_is_approved_by_a_second_admin_started_and_aborted_from_the_page(  # type: ignore[no-untyped-def]
    page, browser, console_url: str, service_key: str
) -> None:
    sign_in(page, "ada")
    page.goto("/twin")
    proposed = page.request.post(
        "/api/v1/probes",
        data={"nodes": [TARGET], "share": 0.05, "max_requests": 1000, "reason": "see the edge"},
        headers={"X-CSRFToken": _csrf(page)},
    )
    assert proposed.status == 201, proposed.text()
    pk = proposed.json()["id"]
    page.reload()
    row = _probe_row(page, pk)
    expect(row).to_contain_text("proposed")
    expect(row).to_contain_text(f"{TARGET} (llama-3.1-8b)")
    # Four eyes: its proposer may not approve it; the page shows the server's refusal.
    _step(page, pk, "Approve", "mine")
    expect(row).to_contain_text("Four-eyes rule")

    alan = browser.new_context(base_url=console_url, viewport={"width": 1440, "height": 900})
    try:
        second = alan.new_page()
        sign_in(second, "alan")
        second.goto("/twin")
        _step(second, pk, "Approve", "small and bounded")
        expect(_probe_row(second, pk)).to_contain_text("approved")
    finally:
        alan.close()

    # Fresh idle telemetry, so the node's queue is known empty when the probe starts (the
    # engine counts its own sends as queued until a newer sample), then in-share sessions.
    now = datetime.now(UTC).isoformat()
    idle = {"running": 0, "queue_depth": 0, "kv_usage": 0.0, "gpu_util": 0.0}
    samples = [{"node": n, "ts": now, "metrics": idle} for n in (TARGET, "fra-h100-1")]
    api_call(console_url, service_key, "POST", "/api/v1/telemetry/samples", {"samples": samples})
    share = Probe(probe_id=pk, share=0.05, targets=frozenset(), remaining=1, max_requests=1)
    inside = [k for k in (f"probe-e2e-{i}" for i in range(2000)) if in_probe(share, k)]
    outside = [f"probe-e2e-{i}" for i in range(40) if f"probe-e2e-{i}" not in inside]
    page.reload()
    _step(page, pk, "Start", "go")
    expect(row).to_contain_text("running")
    # Live decisions, open in a second tab while the probe answers: its rows carry a badge.
    live = page.context.new_page()
    live.goto("/decisions")
    expect(live.get_by_test_id("connection")).to_contain_text("Live")
    try:
        first = _place(console_url, service_key, inside[0])
        assert first["node"] == TARGET and first["probe"]["id"] == pk, first
        assert first["probe"]["ttft_ms"] <= first["probe"]["ttft_target_ms"]
        policys = _place(console_url, service_key, outside[0])
        assert "probe" not in policys, policys
        probed = [_place(console_url, service_key, k) for k in inside[1:4]]
        assert {a["node"] for a in probed if "probe" in a} <= {TARGET}
        assert all("probe" not in _place(console_url, service_key, k) for k in outside[1:])
        rows = live.get_by_test_id("decision-rows")
        badge = rows.locator(f"tr[data-decision='{first['decision_id']}']").get_by_test_id(
            "probe-badge"
        )
        expect(badge).to_have_text(f"probe #{pk}")
        policys_row = rows.locator(f"tr[data-decision='{policys['decision_id']}']")
        expect(policys_row).to_contain_text(policys["node"])
        expect(policys_row.get_by_test_id("probe-badge")).to_have_count(0)
    finally:
        live.close()
        _step(page, pk, "Abort", "enough for now")
    expect(row).to_contain_text("aborted")
    expect(row).to_contain_text("aborted by ada: enough for now")
    assert all("probe" not in _place(console_url, service_key, k) for k in inside[:10])


def _place(url: str, key: str, session: str) -> dict[str, Any]:
    return dict(
        api_call(url, key, "POST", "/api/v1/placements", {**REQUEST, "session_id": session})
    )


def test_a_viewer_sees_the_probes_but_no_controls(page) -> None:  # type: ignore[no-untyped-def]
    sign_in(page, "vera")
    page.goto("/twin")
    expect(page.get_by_test_id("probes")).to_be_visible()
    expect(page.get_by_role("button", name="Propose a probe")).to_have_count(0)
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    expect(page.get_by_role("button", name="Abort")).to_have_count(0)
