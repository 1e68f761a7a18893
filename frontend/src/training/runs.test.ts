import { describe, expect, it } from "vitest";

import type { TrainingRun } from "../api/types";
import { applyProgress, flattenFigures } from "./runs";

const run = (id: number): TrainingRun => ({
  id,
  status: "queued",
  progress: 0,
  log_tail: "",
  created_at: "2025-01-01T00:00:00Z",
});

describe("applyProgress", () => {
  it("updates the run's progress, status and log tail", () => {
    const runs = applyProgress([run(1), run(2)], {
      type: "training.progress",
      run_id: 2,
      status: "running",
      progress: 0.4,
      message: "ppo 40%",
    });
    expect(runs[0]).toEqual(run(1));
    expect(runs[1]).toMatchObject({ status: "running", progress: 0.4, log_tail: "ppo 40%" });
  });

  it("keeps the log tail bounded", () => {
    let runs = [run(1)];
    for (let i = 0; i < 100; i++) {
      runs = applyProgress(runs, { type: "training.progress", run_id: 1, status: "running", progress: i / 100, message: `step ${i}` });
    }
    const lines = runs[0]!.log_tail!.split("\n");
    expect(lines).toHaveLength(40);
    expect(lines.at(-1)).toBe("step 99");
  });

  it("ignores events without a run id", () => {
    const runs = [run(1)];
    expect(applyProgress(runs, { type: "training.progress" })).toBe(runs);
  });
});

describe("flattenFigures", () => {
  it("lists numeric leaves by path", () => {
    expect(
      flattenFigures({ validation: { slo_attainment: 0.91234, episodes: 3 }, wall_seconds: 12.5, notes: null }),
    ).toEqual([
      ["validation.slo_attainment", "0.9123"],
      ["validation.episodes", "3"],
      ["wall_seconds", "12.50"],
    ]);
  });
});
