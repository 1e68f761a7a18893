import { describe, expect, it } from "vitest";

import type { LatestTelemetry } from "../api/types";
import { headerStatus, staleNodes } from "./status";

const node = (stale: boolean) => ({ stale, age_s: stale ? 95 : 2 }) as LatestTelemetry;

describe("header status", () => {
  it("says Live only while every reporting node is fresh", () => {
    expect(headerStatus("connected", [])).toEqual({ label: "Live", tone: "connected", title: "Live stream" });
  });

  it("counts stale nodes instead of saying all is well", () => {
    const stale = staleNodes({ "fra-h100-1": node(true), "muc-l4-1": node(false), "ams-l4-2": node(true) });
    expect(stale).toEqual(["ams-l4-2", "fra-h100-1"]);
    expect(headerStatus("connected", stale)).toEqual({
      label: "Live · 2 stale nodes",
      tone: "stale",
      title: "Live stream connected; stale telemetry from ams-l4-2, fra-h100-1",
    });
    expect(headerStatus("connected", ["a"]).label).toBe("Live · 1 stale node");
  });

  it("puts a broken stream first, keeping the stale nodes in its title", () => {
    const status = headerStatus("reconnecting", ["a"]);
    expect(status.label).toBe("Reconnecting…");
    expect(status.title).toContain("stale telemetry from a");
  });

  it("reads no telemetry as nothing stale", () => {
    expect(staleNodes(undefined)).toEqual([]);
  });
});
