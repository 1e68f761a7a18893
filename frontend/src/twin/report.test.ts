import { describe, expect, it } from "vitest";

import { fidelityRows, profileRows, ratio, ttftPairs } from "./report";

const report = {
  profiles: [
    {
      model: "llama-3.1-8b",
      accelerator: "l4",
      status: "fitted",
      samples: 432,
      mean_decode_batch: 2.8,
      values: {
        prefill_tokens_per_s: { nominal: 3500, fitted: 2698, interval: [2673, 2722], samples: 432 },
        decode_step_ms: { nominal: 28, fitted: 36.5, interval: [36.1, 36.9], samples: 432 },
        decode_step_ms_per_seq: { nominal: 0.5, fitted: 0.53, interval: [0.46, null], samples: 432 },
      },
    },
    { model: "llama-3.1-70b", accelerator: "a100-80", status: "insufficient_data", samples: 0, values: {} },
  ],
  fidelity: {
    before: { ttft: { median_abs_rel_error: 0.083, p95_abs_rel_error: 0.26 }, e2e: { median_abs_rel_error: 0.14, p95_abs_rel_error: 0.25 } },
    after: { ttft: { median_abs_rel_error: 0.015, p95_abs_rel_error: 0.15 }, e2e: { median_abs_rel_error: 0.003, p95_abs_rel_error: 0.05 } },
  },
  ttft_pairs: [[300, 280, 301], [100, 90, 99], ["x", 1, 2]],
};

describe("calibration report", () => {
  it("reads every profile, fitted or not", () => {
    const rows = profileRows(report);
    expect(rows.map((r) => [r.key, r.status])).toEqual([
      ["llama-3.1-8b@l4", "fitted"],
      ["llama-3.1-70b@a100-80", "insufficient_data"],
    ]);
    expect(ratio(rows[0]!.values.prefill_tokens_per_s)).toBeCloseTo(0.771, 3);
    expect(rows[0]!.values.decode_step_ms_per_seq.interval).toEqual([0.46, null]);
    expect(rows[1]!.values.decode_step_ms.interval).toBeNull();
  });

  it("reads fidelity before and after per metric", () => {
    expect(fidelityRows(report)).toEqual([
      { metric: "ttft", before: { median: 0.083, p95: 0.26 }, after: { median: 0.015, p95: 0.15 } },
      { metric: "e2e", before: { median: 0.14, p95: 0.25 }, after: { median: 0.003, p95: 0.05 } },
    ]);
    expect(fidelityRows({})).toEqual([]);
  });

  it("sorts the TTFT pairs by observed value and drops malformed ones", () => {
    expect(ttftPairs(report)).toEqual({ observed: [100, 300], before: [90, 280], after: [99, 301] });
    expect(ttftPairs(null).observed).toEqual([]);
  });
});
