"""Screenshots of every dashboard page at 1440x900, from a running console (the living demo).

Not a test: run it against `make run` (or honcho with LOCUS_WEB_PORT set) once data flows,

    .venv/bin/python -m tests.e2e.screenshot_pages --url http://127.0.0.1:8000 \\
        --password "$(cat var/demo/admin-password)" [--range 15m] [--out docs/screenshots]

It signs in as the demo admin, opens each page, waits for its data, and saves one PNG per
page (docs/dashboard.md shows them).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from playwright.sync_api import Page, ViewportSize, expect, sync_playwright

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, DOCS_SCREENSHOTS

VIEWPORT: ViewportSize = {"width": 1440, "height": 900}


def _shoot(page: Page, out: Path, name: str) -> None:
    page.wait_for_timeout(1500)  # let charts draw and live events settle
    page.screenshot(path=str(out / f"{name}.png"))
    print(f"saved {out / name}.png")


def capture(url: str, username: str, password: str, out: Path, time_range: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(base_url=url, viewport=VIEWPORT, color_scheme="light")
        context.set_default_timeout(20_000)
        page = context.new_page()
        page.goto("/accounts/login/")
        _shoot(page, out, "login")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_url(lambda u: "/accounts/" not in u)

        expect(page.get_by_test_id("fleet-grid")).to_be_visible()
        _shoot(page, out, "fleet")
        page.goto(f"/series?range={time_range}")
        expect(page.get_by_test_id("fleet-charts")).to_be_visible()
        _shoot(page, out, "time-series")
        page.goto("/decisions")
        rows = page.get_by_test_id("decision-rows").locator("tbody tr")
        expect(rows.first).to_be_visible()
        _shoot(page, out, "decisions")
        rows.first.click()
        expect(page.get_by_test_id("receipt")).to_be_visible()
        _shoot(page, out, "decision-receipt")
        page.goto("/slos")
        expect(page.get_by_test_id("slo-table")).to_be_visible()
        _shoot(page, out, "slos")
        page.goto("/policies")
        expect(page.get_by_test_id("policy-versions")).to_be_visible()
        _shoot(page, out, "policies")
        page.goto("/training")
        expect(page.get_by_test_id("training-runs")).to_be_visible()
        _shoot(page, out, "training")
        page.goto("/inventory/nodes")
        _shoot(page, out, "inventory")
        page.goto("/keys")
        expect(page.get_by_test_id("api-keys")).to_be_visible()
        _shoot(page, out, "api-keys")
        page.goto("/twin")
        expect(page.get_by_test_id("calibration-runs")).to_be_visible()
        _shoot(page, out, "twin")
        page.goto("/")
        # A drained or cordoned node shows who took it out and why; else one with trouble.
        expect(page.get_by_test_id("fleet-grid")).to_be_visible()
        page.wait_for_timeout(2000)  # telemetry, breaches and breakers load after the nodes
        taken_out = page.locator(".node-card").filter(
            has=page.get_by_test_id("state-badge").filter(has_text=re.compile("draining|cordoned"))
        )
        troubled = page.get_by_test_id("fleet-grid").locator("[data-health='bad'], .grid-cell")
        target = taken_out.first if taken_out.count() else troubled.first
        target.click()
        expect(page.get_by_test_id("node-actions")).to_be_visible()
        page.goto(f"{page.url}?range={time_range}")
        expect(page.get_by_test_id("node-actions")).to_be_visible()
        _shoot(page, out, "node-detail")
        page.goto("/api/docs/")
        expect(page.locator(".swagger-ui .info")).to_be_visible()
        _shoot(page, out, "api-docs")
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--username", default="admin")
    parser.add_argument("--password", required=True)
    parser.add_argument("--out", type=Path, default=DOCS_SCREENSHOTS)
    parser.add_argument("--range", default="15m", help="time range of the chart pages")
    args = parser.parse_args()
    capture(args.url, args.username, args.password, args.out, args.range)


if __name__ == "__main__":
    main()
