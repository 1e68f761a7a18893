import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import { Placement } from "./Placement";

// The live feed's Node cell, rendered as the browser gets it (the test environment has no DOM:
// server rendering gives the same markup).
function cell(node: string | null, prefill_node: string | null, probe: number | null): string {
  return renderToStaticMarkup(createElement(Placement, { row: { node, prefill_node, probe } }));
}

describe("the live feed's node cell", () => {
  it("shows an ordinary decision by its node, with no badge", () => {
    const html = cell("fra-h100-1", null, null);
    expect(html).toBe("<span>fra-h100-1</span>");
  });

  it("shows a split decision as prefill → decode, and says which is which", () => {
    const html = cell("core-d", "core-p", null);
    expect(html).toContain(">core-p → core-d</span>");
    expect(html).toContain('title="prefill on core-p, decode on core-d"');
    expect(html).not.toContain("probe-badge");
  });

  it("marks a probe's answer with a badge naming the probe", () => {
    const html = cell("fra-a10-1", null, 12);
    expect(html).toContain("<span>fra-a10-1</span>");
    expect(html).toMatch(/<span class="badge state-probe" data-testid="probe-badge"[^>]*>probe #12<\/span>/);
  });

  it("shows both on a split decision a probe answered", () => {
    const html = cell("core-d", "core-p", 4);
    expect(html).toContain("core-p → core-d");
    expect(html).toContain(">probe #4<");
  });
});
