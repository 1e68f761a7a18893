"""A canary in a real browser: the trained version evaluated with the page's seeds, approved by
one admin and put in canary by another; the rollout panel's verdict, elapsed time, watchdog and
cost, refreshed by itself as outcomes arrive; and a learned decision of the canary explained on
its own page and on its node's Why panel."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import api_call, sign_in
from tests.e2e.test_operations import INTERACTIVE, _csrf, _decide, _outcome

pytestmark = pytest.mark.e2e

# The canary's traffic is batch's (TTFT target 10 s, contract-example.yaml): interactive's
# burn-rate windows stay as the later tests expect them (test_sre_flows opens an interactive
# breach from slow outcomes, which good ones here would dilute).
FAST_MS, SLOW_MS = 300.0, 12_000.0
BATCH = {**INTERACTIVE, "source": "us-batch"}
# LOCUS_CANARY_MIN_OUTCOMES (100) an arm, so the watchdog judges: about 260 at a 50% share.
DECISIONS = 260


def _trained_version(page: Any) -> dict[str, Any]:
    """The version the seed's training run registered (started by ada)."""
    versions = page.request.get("/api/v1/policies?kind=learned").json()["results"]
    assert versions, "the e2e seed registers a trained version"
    version: dict[str, Any] = versions[-1]
    assert version["registered_by_person"] == "ada"
    return version


def _post(page: Any, path: str, body: dict[str, Any]) -> Any:
    answer = page.request.post(path, data=body, headers={"X-CSRFToken": _csrf(page)})
    assert answer.status in (200, 201, 202), answer.text()
    return answer.json()


# The seed's telemetry of fra-h100-1 is stale by now, so the engine leaves that node out; for
# a runner-up it reports again, LOCUS_TELEMETRY_STALE_SECONDS (30) minus this ago, so it is
# stale again soon after, as later tests expect (test_sre_flows' receipt rules one node out).
FRESH_FOR_S = 15


def _explained(url: str, key: str) -> dict[str, Any]:
    """A decision asked to explain, with a runner-up, once the engine sees fra-h100-1's new
    reading (its snapshot refreshes every second)."""
    at = datetime.now(UTC) - timedelta(seconds=30 - FRESH_FOR_S)
    metrics = {"running": 4, "queue_depth": 1, "kv_usage": 0.3, "gpu_util": 0.5}
    sample = {"node": "fra-h100-1", "ts": at.isoformat(), "metrics": metrics}
    api_call(url, key, "POST", "/api/v1/telemetry/samples", {"samples": [sample]})
    for _ in range(50):
        decided: dict[str, Any] = api_call(
            url, key, "POST", "/api/v1/placements", {**INTERACTIVE, "explain": True}
        )
        if decided["fallbacks"]:
            return decided
        time.sleep(0.2)
    raise AssertionError(f"no decision with a runner-up: {decided}")


def _stale_again(page: Any) -> None:
    """Wait until fra-h100-1's reading is stale again, as the tests after this one found it."""
    for _ in range(100):
        why = page.request.get("/api/v1/nodes/fra-h100-1/why").json()
        if (why.get("telemetry") or {}).get("stale", True):
            return
        time.sleep(0.5)
    raise AssertionError(f"fra-h100-1's telemetry stays fresh: {why.get('telemetry')}")


def _roll_back(page: Any, pk: int) -> None:
    """Leave the session's console without a canary for the tests after this one."""
    page.request.post(
        f"/api/v1/policies/{pk}/rollback",
        data={"reason": "e2e: end of the canary test"},
        headers={"X-CSRFToken": _csrf(page)},
    )


def test_the_rollout_panel_says_whether_a_canary_is_winning_and_refreshes_live(  # type: ignore[no-untyped-def]
    page, console_url, service_key, screenshots
) -> None:
    sign_in(page, "ada")
    version = _trained_version(page)
    key = f"{version['name']}@{version['version']}"
    page.goto(f"/policies?version={version['id']}")
    actions = page.get_by_test_id("policy-actions")
    state = page.get_by_test_id("policy-detail").get_by_test_id("detail-state")
    expect(state).to_have_text("candidate")

    # Evaluate from the page: the fields start at the configured defaults (one seed here, to
    # keep the eager evaluation short; 0-2 by default) and take the seeds typed.
    seeds = actions.get_by_test_id("evaluation-seeds")
    expect(seeds).to_have_value("0")
    expect(actions.get_by_test_id("evaluation-loads")).to_have_value("1")
    seeds.fill("0, 1")
    actions.get_by_role("button", name="Evaluate").click()
    expect(page.get_by_test_id("evaluation-status")).to_have_text("succeeded", timeout=120_000)
    expect(page.get_by_test_id("evaluation")).to_contain_text("seeds 0, 1")

    page.context.clear_cookies()
    sign_in(page, "alan")  # the second pair of eyes
    page.goto(f"/policies?version={version['id']}")
    reason = actions.get_by_label("Reason")
    reason.fill("e2e: the trained version, approved")
    actions.get_by_role("button", name="Approve").click()
    expect(state).to_have_text("approved")
    try:
        reason.fill("e2e: half the traffic")
        actions.get_by_label("Canary share (%)").fill("50")
        actions.get_by_role("button", name="Canary", exact=True).click()
        expect(state).to_have_text("canary")
        expect(actions.get_by_test_id("four-eyes")).to_contain_text("approved by alan")

        # Without a version in the URL the page selects the one in canary.
        page.goto("/policies")
        expect(page.get_by_test_id("policy-detail")).to_contain_text(key)
        rollout = page.get_by_test_id("rollout")
        verdict = rollout.get_by_test_id("canary-verdict")
        expect(verdict).to_have_attribute("data-verdict", "undecided")
        expect(verdict.get_by_test_id("verdict")).to_have_text("Not yet decided")
        expect(verdict.get_by_test_id("canary-elapsed")).to_have_text(re.compile(r"^\d+ s$"))
        expect(verdict.get_by_test_id("watchdog")).to_have_attribute("data-state", "waiting")
        expect(verdict.get_by_test_id("watchdog")).to_contain_text("checks every 30 s")
        expect(verdict.get_by_test_id("canary-cost")).to_contain_text("attributed")

        # Traffic with known outcomes: the canary's requests miss their TTFT target, the
        # active arm's meet it. The panel updates without a reload.
        answers = _decide(console_url, service_key, [BATCH] * DECISIONS)
        arms = {"active": 0, "canary": 0}
        for answer in answers:
            arms[answer["arm"]] += 1
            ttft = SLOW_MS if answer["arm"] == "canary" else FAST_MS
            _outcome(console_url, service_key, answer["decision_id"], ttft, ttft + 500)
        assert min(arms.values()) >= 100, arms
        expect(verdict).to_have_attribute("data-verdict", "losing", timeout=15_000)
        expect(verdict.get_by_test_id("verdict")).to_have_text("Losing")
        expect(verdict.get_by_test_id("verdict-interval")).to_contain_text("canary − active −")
        expect(rollout.get_by_test_id("canary-arm")).to_contain_text(
            f"{arms['canary']} outcomes · 0.0% SLO met"
        )
        expect(verdict.get_by_test_id("watchdog")).to_have_attribute("data-state", "rollback")
        expect(verdict.get_by_test_id("watchdog")).to_contain_text("would roll back")
        page.evaluate("window.scrollTo(0, 0)")
        screenshots.take(page, "rollout-canary")
    finally:
        _roll_back(page, version["id"])


def test_a_learned_decision_is_explained(page, console_url, service_key, screenshots) -> None:  # type: ignore[no-untyped-def]
    sign_in(page, "alan")
    version = _trained_version(page)
    # A fresh canary of the trained version (the test above retired it: register it again).
    body = {"name": version["name"], "version": "e2e-why", "artifact_dir": version["artifact_dir"]}
    pk = _post(page, "/api/v1/policies", body)["id"]
    try:
        _post(page, f"/api/v1/policies/{pk}/evaluate", {"seeds": [0]})
        page.context.clear_cookies()
        sign_in(page, "ada")  # the second pair of eyes: alan registered it
        _post(page, f"/api/v1/policies/{pk}/approve", {"reason": "e2e: approve"})
        page.context.clear_cookies()
        sign_in(page, "alan")
        _post(
            page, f"/api/v1/policies/{pk}/canary", {"reason": "e2e: all of it", "canary_share": 1.0}
        )

        # All traffic on the trained scorer; a request asked to explain keeps its attribution.
        decided = _explained(console_url, service_key)
        assert decided["arm"] == "canary" and not decided.get("degraded"), decided
        page.goto(f"/decisions/{decided['decision_id']}")
        why = page.get_by_test_id("learned-why")
        expect(why).to_contain_text("What moved the learned scorer")
        expect(why).to_contain_text(f"Score margin over {decided['fallbacks'][0]}")
        expect(why.locator("tbody tr")).to_have_count(5)
        expect(why).to_contain_text("Integrated gradients")
        screenshots.take(page, "learned-decision")

        page.goto(f"/nodes/{decided['node']}")
        row = page.get_by_test_id("why-decisions").locator(
            f"tr[data-decision='{decided['decision_id']}']"
        )
        expect(row.get_by_test_id("why-runner-up")).to_contain_text(
            f"over {decided['fallbacks'][0]}"
        )
        expect(row.get_by_test_id("why-runner-up")).to_contain_text("moved most by")
    finally:
        _roll_back(page, pk)
        _stale_again(page)
