import { describe, expect, it } from "vitest";

import { probeProgress, probeSteps, probeTargetLabel, underObservedProfiles } from "./probes";

describe("exploration probes", () => {
  it("names the profiles a run could not pin down", () => {
    const report = {
      profiles: [
        { model: "llama-3.1-8b", accelerator: "h100", status: "fitted", values: {} },
        { model: "llama-3.1-8b", accelerator: "a10g", status: "insufficient_data", values: {} },
        { model: "qwen2.5-7b", accelerator: "l4", status: "not_identifiable", values: {} },
        { model: "qwen2.5-7b", accelerator: "h100", status: "agrees_with_nominal", values: {} },
      ],
    };
    expect(underObservedProfiles(report)).toEqual(["llama-3.1-8b@a10g", "qwen2.5-7b@l4"]);
    expect(underObservedProfiles(null)).toEqual([]);
  });

  it("names a fitted profile of which the run held a value, and which", () => {
    const value = (status: string) => ({ nominal: 1, fitted: 1, interval: null, samples: 135, status });
    const report = {
      profiles: [
        {
          model: "llama-3.1-8b",
          accelerator: "l40s",
          status: "fitted",
          values: {
            prefill_tokens_per_s: value("not_identifiable"),
            decode_step_ms: value("fitted"),
            decode_step_ms_per_seq: value("not_identifiable"),
          },
        },
        {
          model: "llama-3.1-8b",
          accelerator: "h100",
          status: "fitted",
          values: {
            prefill_tokens_per_s: value("agrees_with_nominal"),
            decode_step_ms: value("fitted"),
            decode_step_ms_per_seq: value("agrees_with_nominal"),
          },
        },
        {
          // Only the per-sequence slope held: a probe's lone requests cannot pin it.
          model: "qwen2.5-7b",
          accelerator: "l4",
          status: "fitted",
          values: {
            prefill_tokens_per_s: value("fitted"),
            decode_step_ms: value("fitted"),
            decode_step_ms_per_seq: value("not_identifiable"),
          },
        },
      ],
    };
    expect(underObservedProfiles(report)).toEqual([
      "llama-3.1-8b@l40s (prefill_tokens_per_s, decode_step_ms_per_seq held)",
    ]);
  });

  it("says why each target is one", () => {
    const reason = "0 queue-free TTFT rows, fewer than 3: its other rows are confounded by queueing, so it is kept at nominal";
    expect(
      probeTargetLabel({
        node: "dal-l40s-8b-1",
        model: "llama-3.1-8b",
        profile_status: "fitted",
        held: [{ value: "prefill_tokens_per_s", status: "not_identifiable", reason }],
      }),
    ).toBe("dal-l40s-8b-1 (llama-3.1-8b): prefill_tokens_per_s not_identifiable");
    expect(
      probeTargetLabel({ node: "fra-a10-1", model: "llama-3.1-8b", profile_status: "insufficient_data", held: [] }),
    ).toBe("fra-a10-1 (llama-3.1-8b): insufficient_data");
    // Named by node: no report behind it.
    expect(probeTargetLabel({ node: "muc-l4-1", model: "llama-3.1-8b", profile_status: "", held: [] })).toBe(
      "muc-l4-1 (llama-3.1-8b)",
    );
  });

  it("offers the steps its state allows", () => {
    expect(probeSteps("proposed")).toEqual(["approve", "abort"]);
    expect(probeSteps("approved")).toEqual(["start", "abort"]);
    expect(probeSteps("running")).toEqual(["abort"]);
    expect(probeSteps("completed")).toEqual([]);
    expect(probeSteps("aborted")).toEqual([]);
  });

  it("reads its progress against its budget", () => {
    expect(probeProgress({ sent: 12, max_requests: 1000, share: 0.01 })).toBe("12 / 1000 sent at 1%");
    expect(probeProgress({ sent: 0, max_requests: 40, share: 0.025 })).toBe("0 / 40 sent at 2.5%");
  });
});
