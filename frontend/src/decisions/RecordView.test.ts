import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { MemoryRouter } from "react-router";
import { describe, expect, it } from "vitest";

import type { DecisionRecord, Receipt } from "../api/types";
import { kvBytesText } from "./ReceiptNotes";
import { DecisionRecordView } from "./RecordView";

// The decision panel's body as the browser gets it (no DOM here: server rendering gives the
// same markup), for records shaped as GET /api/v1/decisions/{id} serves them (receipt v4).
function candidate(node: string, ttft_ms: number) {
  return { node, site: "fra-core", score: 0.8, ttft_ms, e2e_ms: 2400, prefill_ms: 90, cost_usd: 0.0004, kv_used: 0.3, queue: 1 };
}

function record(extra: Partial<DecisionRecord>, receipt: Receipt): DecisionRecord {
  return {
    id: "d-1",
    receipt,
    created_at: "2026-11-27T07:00:00Z",
    source: "web",
    source_site: "fra-core",
    model: "llama-70b",
    slo: "interactive",
    prompt_tokens: 6000,
    max_output_tokens: 200,
    node: "core-d",
    node_site: "fra-core",
    fallbacks: [],
    prefill_node: "",
    policy_name: "weighted-score",
    policy_version: "3",
    arm: "active",
    latency_us: 412,
    ttft_ms: null,
    e2e_ms: null,
    outcome_at: null,
    probe: null,
    ...extra,
  };
}

function panel(r: DecisionRecord): string {
  return renderToStaticMarkup(createElement(MemoryRouter, null, createElement(DecisionRecordView, { record: r })));
}

/** A property's value cell, by its term (without the router's `data-discover` on links). */
function property(html: string, term: string): string | undefined {
  return html.match(new RegExp(`<dt>${term}</dt><dd>(.*?)</dd>`))?.[1]?.replaceAll(' data-discover="true"', "");
}

const split = {
  prefill_node: "core-p",
  prefill_site: "fra-edge",
  kv_bytes: 12_582_912,
  transfer_ms: 4.217,
  estimated_ttft_split_ms: 182.4,
  estimated_ttft_mixed_ms: 431.9,
};

describe("the decision panel", () => {
  it("shows an ordinary decision's node with neither a split nor a probe note", () => {
    const html = panel(record({ node: "fra-h100-1" }, { v: 4, candidates: [candidate("fra-h100-1", 130)], rejected: {} }));
    expect(property(html, "Node")).toBe('<a href="/nodes/fra-h100-1">fra-h100-1</a>');
    expect(html).not.toContain("Prefill node");
    expect(html).not.toContain("receipt-split");
    expect(html).not.toContain("receipt-probe");
    expect(html).not.toContain("<dt>Probe</dt>");
  });

  it("shows a split decision's prefill node and its transfer and TTFT estimates", () => {
    const receipt = { v: 4, candidates: [candidate("core-d", 182.4)], rejected: {}, split };
    const html = panel(record({ node: "core-d", prefill_node: "core-p" }, receipt));
    expect(property(html, "Prefill node")).toBe('<a href="/nodes/core-p">core-p</a> (site fra-edge)');
    expect(property(html, "Decode node")).toBe('<a href="/nodes/core-d">core-d</a>');
    expect(property(html, "Node")).toBeUndefined();
    const note = html.match(/<p class="small" data-testid="receipt-split">(.*?)<\/p>/)?.[1] ?? "";
    expect(note).toContain('prefill on <span class="mono">core-p</span> (site fra-edge), decode on <span class="mono">core-d</span>');
    expect(note).toContain("KV, 12.0 MiB, moves to the decode node in an estimated 4.2 ms");
    expect(note).toContain("estimated TTFT is 182 ms, against 432 ms for the one-node answer it replaced.");
  });

  it("says so when no single node could have answered a split decision", () => {
    const receipt = { v: 4, candidates: [candidate("core-d", 2500)], rejected: {}, split: { ...split, transfer_ms: 35.5, estimated_ttft_split_ms: 2500, estimated_ttft_mixed_ms: null } };
    const html = panel(record({ node: "core-d", prefill_node: "core-p" }, receipt));
    expect(html).toContain("in an estimated 36 ms; the pair&#x27;s estimated TTFT is 2.50 s, where no single node could have answered.");
  });

  it("shows a split record's prefill node even when its receipt predates the split note", () => {
    const html = panel(record({ node: "core-d", prefill_node: "core-p" }, { v: 2, candidates: [candidate("core-d", 200)], rejected: {} }));
    expect(property(html, "Prefill node")).toBe('<a href="/nodes/core-p">core-p</a>');
    expect(html).not.toContain("receipt-split");
  });

  it("shows a probe's answer: the probe, the policy's own pick, the estimated TTFT against its target", () => {
    const probe = { id: 12, node: "fra-a10-1", policy_pick: "fra-h100-1", ttft_ms: 310.4, ttft_target_ms: 500 };
    const receipt = { v: 4, candidates: [candidate("fra-a10-1", 310.4), candidate("fra-h100-1", 130)], rejected: {}, probe };
    const html = panel(record({ node: "fra-a10-1", probe: 12, fallbacks: ["fra-h100-1"] }, receipt));
    expect(property(html, "Probe")).toBe("#12, instead of the policy&#x27;s pick fra-h100-1");
    const note = html.match(/<p class="small" data-testid="receipt-probe">(.*?)<\/p>/)?.[1] ?? "";
    expect(note).toContain('<span class="badge state-probe">probe #12</span>');
    expect(note).toContain('to <span class="mono">fra-a10-1</span>, whose estimated TTFT was 310 ms against the request&#x27;s 500 ms target');
    expect(note).toContain('<span class="mono" data-testid="probe-policy-pick">fra-h100-1</span>');
  });

  it("names the probe from the record alone when the receipt has no note for it", () => {
    const html = panel(record({ node: "fra-a10-1", probe: 7 }, { v: 3, candidates: [candidate("fra-a10-1", 300)], rejected: {} }));
    expect(property(html, "Probe")).toBe("#7");
    expect(html).not.toContain("receipt-probe");
  });
});

describe("KV sizes", () => {
  it("reads in binary units", () => {
    expect(kvBytesText(900)).toBe("900 bytes");
    expect(kvBytesText(1536)).toBe("1.5 KiB");
    expect(kvBytesText(12_582_912)).toBe("12.0 MiB");
    expect(kvBytesText(3 * 1024 ** 3)).toBe("3.0 GiB");
  });
});
