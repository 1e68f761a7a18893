"""The dashboard in a real browser: sign-in, role gating, a node drain seen live."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import TELEMETRY_NODE, sign_in

pytestmark = pytest.mark.e2e

EXAMPLE_NODES = ("muc-l4-1", "fra-h100-1")


def test_it_signs_in_and_lands_on_the_fleet_overview(page, screenshots) -> None:  # type: ignore[no-untyped-def]
    page.goto("/inventory/nodes")
    page.wait_for_url(re.compile(r"/accounts/login/\?next=%2Finventory%2Fnodes$"))
    screenshots.take(page, "login")

    sign_in(page, "otto")
    expect(page.get_by_role("heading", name="Fleet")).to_be_visible()
    for name in EXAMPLE_NODES:
        expect(page.locator(f".node-card[data-node='{name}']")).to_be_visible()
    for tier in ("edge", "regional", "cloud"):
        expect(page.locator(f".tier[data-tier='{tier}']")).to_be_visible()
    expect(page.get_by_test_id("connection")).to_contain_text("Live")
    expect(page.get_by_test_id("user")).to_contain_text("otto (operator)")
    screenshots.take(page, "fleet-overview")

    page.get_by_role("button", name="Theme: system").click()
    page.get_by_role("button", name="Theme: light").click()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    screenshots.take(page, "fleet-overview-dark")

    page.get_by_role("link", name="Live decisions").click()
    expect(page.get_by_test_id("sample-note")).to_contain_text("decisions/s")

    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/accounts/login/")
    page.goto("/")
    page.wait_for_url("**/accounts/login/?next=%2F")


def test_a_viewer_sees_no_operator_controls_and_the_api_refuses_them(page, screenshots) -> None:  # type: ignore[no-untyped-def]
    sign_in(page, "vera")
    page.goto(f"/nodes/{TELEMETRY_NODE}")
    expect(page.get_by_role("heading", name=TELEMETRY_NODE, level=1)).to_be_visible()
    expect(page.get_by_text("fra-core (regional)")).to_be_visible()
    # The node's telemetry age (and "stale" when it is) is on the node page, not only the fleet's.
    # The node's own properties (the "Why" panel above them is a list of properties too, shown
    # when something needs explaining, e.g. stale telemetry).
    properties = page.locator(".properties").filter(has_text="fra-core (regional)")
    expect(properties).to_contain_text(re.compile(r"\d+ s old"))
    expect(page.locator("figure[data-metric='running'] canvas")).to_be_visible()
    expect(page.locator("figure[data-metric='ttft_p95_s']")).to_contain_text("No telemetry")
    expect(page.get_by_test_id("node-actions")).to_have_count(0)
    expect(page.get_by_role("button", name="Drain")).to_have_count(0)
    screenshots.take(page, "node-detail-viewer")

    page.goto("/inventory/sites")
    expect(page.get_by_role("cell", name="fra-core")).to_be_visible()
    expect(page.get_by_text("Read only")).to_be_visible()
    expect(page.get_by_role("button", name="New site")).to_have_count(0)
    expect(page.get_by_role("button", name="Edit")).to_have_count(0)
    screenshots.take(page, "inventory-viewer")

    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(
        f"/api/v1/nodes/{TELEMETRY_NODE}/drain", data={"reason": "x"}, headers={"X-CSRFToken": csrf}
    )
    assert response.status == 403
    assert response.json() == {"message": "Your role does not allow this."}


def test_an_operator_drains_a_node_and_the_live_event_arrives(page, screenshots) -> None:  # type: ignore[no-untyped-def]
    sign_in(page, "otto")
    page.locator(".node-card[data-node='muc-l4-1']").click()
    page.wait_for_url("**/nodes/muc-l4-1")
    badge = page.locator("h1").get_by_test_id("state-badge")
    expect(badge).to_have_text("active")
    expect(page.get_by_test_id("connection")).to_contain_text("Live")

    page.get_by_label("Reason").fill("kernel upgrade")
    page.get_by_role("button", name="Drain").click()
    expect(badge).to_have_text("draining")
    event = page.get_by_test_id("activity-feed").locator("li[data-type='node.state']").first
    expect(event).to_contain_text("muc-l4-1: active → draining")
    expect(page.get_by_test_id("last-state-change")).to_contain_text("kernel upgrade")
    expect(page.get_by_role("button", name="Drain")).to_be_disabled()
    screenshots.take(page, "node-detail-operator")

    page.get_by_role("link", name="← Fleet").click()
    card = page.locator(".node-card[data-node='muc-l4-1']")
    expect(card.get_by_test_id("state-badge")).to_have_text("draining")
    screenshots.take(page, "fleet-after-drain")

    page.goto("/nodes/muc-l4-1")
    page.get_by_role("button", name="Uncordon").click()
    expect(badge).to_have_text("active")


def test_an_operator_edits_the_inventory_and_sees_field_errors(page, screenshots) -> None:  # type: ignore[no-untyped-def]
    sign_in(page, "otto")
    page.goto("/inventory/sites")
    page.get_by_role("button", name="New site").click()
    form = page.get_by_role("form", name="New site")
    form.get_by_label("Name").fill("ber-edge")
    form.get_by_role("button", name="Save").click()
    expect(form.get_by_role("alert")).to_contain_text("The request is invalid.")
    expect(form.locator(".field-error").first).to_contain_text("required")
    screenshots.take(page, "inventory-errors")

    form.get_by_label("Tier").select_option("edge")
    form.get_by_label("Region").fill("eu-central")
    form.get_by_label("Jurisdiction").fill("EU")
    form.get_by_role("button", name="Save").click()
    expect(page.get_by_role("cell", name="ber-edge")).to_be_visible()

    row = page.get_by_role("row").filter(has_text="ber-edge")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("cell", name="ber-edge")).to_have_count(0)
