import { describe, expect, it } from "vitest";

import type { BurnRate, SloAttainment } from "../api/types";
import { sloStanding, sloTone } from "./standing";

// The demo's rules (LOCUS_SLO_PERIOD_DAYS=1): page 14.4× over 2 min and 10 s, ticket 6× over
// 12 min and 1 min.
const rule = (severity: "page" | "ticket", long: number | null, short = long, holds = false): BurnRate => ({
  severity,
  factor: severity === "page" ? 14.4 : 6,
  long_window_s: severity === "page" ? 120 : 720,
  short_window_s: severity === "page" ? 10 : 60,
  requests: 400,
  long_burn_rate: long,
  short_burn_rate: short,
  holds,
});

const slo = (over: Partial<SloAttainment> = {}): SloAttainment => ({
  slo: "interactive",
  outcomes: 1000,
  met: 800,
  attainment: 0.8,
  objective: 0.95,
  burn_rates: [rule("page", 3.1), rule("ticket", 4.8)],
  open_breach: null,
  open_breach_metric: null,
  ...over,
});

describe("sloTone", () => {
  it("is ok when the attainment meets the SLO's own objective, not a fixed 99%", () => {
    expect(sloTone(slo({ met: 960, attainment: 0.96, burn_rates: [rule("page", 0.8), rule("ticket", 0.8)] }))).toBe("ok");
    expect(sloTone(slo({ met: 950, attainment: 0.95 }))).toBe("ok");
  });

  it("warns, not red, when below the objective with no breach open (the demo's 80%)", () => {
    expect(sloTone(slo())).toBe("warn");
  });

  it("warns while a rule holds but its breach has not opened yet", () => {
    expect(sloTone(slo({ met: 990, attainment: 0.99, burn_rates: [rule("page", 15, 16, true), rule("ticket", 2)] }))).toBe("warn");
  });

  it("is bad only with an open page or ticket breach, whatever the attainment", () => {
    expect(sloTone(slo({ open_breach: "ticket", open_breach_metric: "within_targets" }))).toBe("bad");
    expect(sloTone(slo({ attainment: 0.99, open_breach: "page", open_breach_metric: "error_rate" }))).toBe("bad");
  });

  it("has no tone for an SLO no longer defined", () => {
    expect(sloTone(slo({ objective: null, burn_rates: [] }))).toBeUndefined();
  });
});

describe("sloStanding", () => {
  it("says how fast the budget burns and the nearest rule's factor", () => {
    expect(sloStanding(slo(), 900).sub).toBe("4.8× burn over 12 min, ticket at 6×");
    const paging = slo({ burn_rates: [rule("page", 12.0), rule("ticket", 4.0)] });
    expect(sloStanding(paging, 900).sub).toBe("12.0× burn over 2 min, page at 14.4×");
  });

  it("names the open breach, and its SLI when it is not the tile's", () => {
    expect(sloStanding(slo({ open_breach: "ticket", open_breach_metric: "within_targets" }), 900).sub).toBe("ticket breach open");
    expect(sloStanding(slo({ open_breach: "page", open_breach_metric: "error_rate" }), 900).sub).toBe("page breach open (error rate)");
  });

  it("says a holding rule is firing, and the objective when all is well", () => {
    const firing = slo({ burn_rates: [rule("page", 3), rule("ticket", 6.5, 7, true)] });
    expect(sloStanding(firing, 900).sub).toBe("6.5× burn over 12 min, ticket rule firing");
    expect(sloStanding(slo({ met: 990, attainment: 0.99, burn_rates: [] }), 900).sub).toBe("990 of 1000 met, objective 95%");
  });

  it("says budget burns when below objective with nothing measured in the rules' windows", () => {
    expect(sloStanding(slo({ burn_rates: [rule("page", null), rule("ticket", null)] }), 900).sub).toBe(
      "below 95% objective, burning budget",
    );
  });

  it("names the attainment window and every rule's windows in the tooltip", () => {
    const { title } = sloStanding(slo(), 900);
    expect(title).toContain("Attainment over the last 15 min: 80.0% of 1000 outcomes (objective 95%).");
    expect(title).toContain("page 14.4× over 2 min and 10 s: 3.1× / 3.1×");
    expect(title).toContain("ticket 6× over 12 min and 1 min: 4.8× / 4.8×");
    expect(title).toContain("No breach open.");
  });
});
