import { describe, expect, it } from "vitest";

import { fidelityRows, keptNote, linkRows, profileRows, ratio, readVerdict, ttftPairs } from "./report";

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

  it("reads each value's status and identifiability", () => {
    const rows = profileRows({
      profiles: [
        {
          model: "m",
          accelerator: "a",
          status: "fitted",
          samples: 300,
          values: {
            prefill_tokens_per_s: { nominal: 100, fitted: 80, interval: [79, 81], samples: 300, status: "fitted", identifiability: { rows: 300, relative_ci: 0.01, spread: 0.9 } },
            decode_step_ms: { nominal: 9, fitted: 9, interval: null, samples: 300, status: "not_identifiable", identifiability: { rows: 300, relative_ci: null, spread: 0.1 } },
            decode_step_ms_per_seq: { nominal: 1, fitted: 1, interval: [0.98, 1.02], samples: 300, status: "agrees_with_nominal", identifiability: { rows: 300, relative_ci: 0.02, spread: 0.1 } },
          },
        },
      ],
    });
    const values = rows[0]!.values;
    expect(values.prefill_tokens_per_s.relativeCi).toBe(0.01);
    expect(keptNote(values.prefill_tokens_per_s)).toBeNull();
    expect(values.decode_step_ms.relativeCi).toBeNull();
    expect(keptNote(values.decode_step_ms)).toBe("not identifiable: kept");
    expect(keptNote(values.decode_step_ms_per_seq)).toBe("agrees with nominal");
  });

  it("reads a verdict, and none where the run has none", () => {
    expect(readVerdict(null)).toBeNull();
    const verdict = readVerdict({ verdict: "no_improvement", reason: "worse: ttft median", worse: ["ttft median"], held_out: 250 });
    expect(verdict).toEqual({ verdict: "no_improvement", reason: "worse: ttft median", worse: ["ttft median"], heldOut: 250 });
    expect(readVerdict({ verdict: "improved", reason: "", worse: [], held_out: 9 })!.verdict).toBe("improved");
  });
});

describe("link bandwidths", () => {
  it("reads the links split requests' KV crossed, and only those", () => {
    const rows = linkRows({
      links: [
        {
          a: "muc-edge",
          b: "fra-core",
          status: "not_fitted",
          values: {
            rtt_ms: { nominal: 9, fitted: 9, interval: null, samples: 900 },
            bandwidth_gbps: { nominal: 10, fitted: 4.99, interval: [4.98, 5.0], samples: 302, status: "fitted" },
          },
        },
        {
          a: "ams-edge",
          b: "fra-core",
          values: { bandwidth_gbps: { nominal: 10, fitted: 10, interval: null, samples: 12, status: "insufficient_data" } },
        },
        { a: "muc-edge", b: "ams-edge", values: { rtt_ms: { nominal: 4, fitted: 4, interval: null, samples: 0 } } },
      ],
    });
    expect(rows.map((r) => [r.key, r.bandwidth.status, r.bandwidth.samples])).toEqual([
      ["muc-edge–fra-core", "fitted", 302],
      ["ams-edge–fra-core", "insufficient_data", 12],
    ]);
    expect(ratio(rows[0]!.bandwidth)).toBeCloseTo(0.499, 3);
    expect(rows[0]!.bandwidth.interval).toEqual([4.98, 5.0]);
    expect(linkRows({ links: [] })).toEqual([]);
    expect(linkRows(null)).toEqual([]);
  });
});
