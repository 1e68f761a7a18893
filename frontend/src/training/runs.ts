// Training runs kept current from `training.progress` events (console/policies/training.py).

import type { TrainingRun } from "../api/types";
import type { LiveEvent } from "../live/stream";

const LOG_LINES = 40;

/** The runs after a progress event: the run's status and progress updated, its message
 *  appended to the log tail. Unknown runs are left to the next reload. */
export function applyProgress(runs: TrainingRun[], event: LiveEvent): TrainingRun[] {
  if (typeof event.run_id !== "number") return runs;
  return runs.map((run) => {
    if (run.id !== event.run_id) return run;
    const message = typeof event.message === "string" ? event.message : "";
    const lines = [...(run.log_tail ? run.log_tail.split("\n") : []), ...(message ? [message] : [])];
    return {
      ...run,
      status: (typeof event.status === "string" ? event.status : run.status) as TrainingRun["status"],
      progress: typeof event.progress === "number" ? event.progress : run.progress,
      log_tail: lines.slice(-LOG_LINES).join("\n"),
    };
  });
}

/** Numeric and short string leaves of a report as [path, value] rows, for a compact table. */
export function flattenFigures(value: unknown, prefix = "", depth = 0): [string, string][] {
  if (value === null || value === undefined) return [];
  if (typeof value === "number") {
    const text = Number.isInteger(value) ? String(value) : value.toPrecision(4);
    return [[prefix, text]];
  }
  if (typeof value === "string" || typeof value === "boolean") {
    return String(value).length <= 120 ? [[prefix, String(value)]] : [];
  }
  if (depth >= 4 || typeof value !== "object" || Array.isArray(value)) return [];
  return Object.entries(value).flatMap(([k, v]) =>
    flattenFigures(v, prefix ? `${prefix}.${k}` : k, depth + 1),
  );
}
