// The learning curve of a training run, from the named-metrics records the worker stores
// (TrainingRun.metrics; optimizer/rl/phases.py): validation SLO attainment by PPO step, with
// the teacher's and the best heuristic's attainment on the same validation replays.

export interface LearningCurve {
  steps: number[];
  policy: number[];
  teacher: number | null;
  bestHeuristic: number | null;
  bestHeuristicName: string;
}

type Record_ = Record<string, unknown>;

function isRecord(value: unknown): value is Record_ {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function num(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** Validation points in step order (a later record at the same step wins) and the baselines;
 *  records of other kinds, and malformed ones, are skipped. */
export function learningCurve(metrics: unknown): LearningCurve {
  const records = Array.isArray(metrics) ? metrics.filter(isRecord) : [];
  const byStep = new Map<number, number>();
  let teacher: number | null = null;
  let best: number | null = null;
  let bestName = "";
  for (const r of records) {
    if (r.phase === "baselines") {
      teacher = num(r.teacher_attainment) ?? teacher;
      best = num(r.best_heuristic_attainment) ?? best;
      bestName = typeof r.best_heuristic === "string" ? r.best_heuristic : bestName;
    }
    if (r.event !== "validation") continue;
    const step = num(r.timesteps);
    const attainment = num(r.slo_attainment);
    if (step === null || attainment === null) continue;
    byStep.set(step, attainment);
    teacher = num(r.teacher_attainment) ?? teacher;
    best = num(r.best_heuristic_attainment) ?? best;
  }
  const steps = [...byStep.keys()].sort((a, b) => a - b);
  return {
    steps,
    policy: steps.map((s) => byStep.get(s)!),
    teacher,
    bestHeuristic: best,
    bestHeuristicName: bestName,
  };
}
