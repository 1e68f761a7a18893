import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

import type { LearningCurve } from "../training/curve";

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

const percent = (_: uPlot, values: number[]) => values.map((v) => `${(v * 100).toFixed(0)}%`);

/** Validation SLO attainment by PPO step, with the teacher and the best heuristic as flat
 *  reference lines (their attainment on the same validation replays). */
export function LearningCurveChart({ curve, height = 220 }: { curve: LearningCurve; height?: number }) {
  const container = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const element = container.current;
    if (!element || curve.steps.length === 0) return;
    const axis = { stroke: cssVar("--muted"), grid: { stroke: cssVar("--grid") } };
    const flat = (value: number | null) => curve.steps.map(() => value);
    const chart = new uPlot(
      {
        width: element.clientWidth || 400,
        height,
        scales: { x: { time: false } },
        axes: [
          { ...axis, label: "PPO steps" },
          { ...axis, values: percent, size: 50 },
        ],
        series: [
          { label: "PPO steps" },
          { label: "policy (validation)", stroke: cssVar("--accent"), width: 2, points: { show: true } },
          { label: "teacher", stroke: cssVar("--info"), width: 1.5, dash: [6, 4] },
          { label: `best heuristic${curve.bestHeuristicName ? `: ${curve.bestHeuristicName}` : ""}`, stroke: cssVar("--warn"), width: 1.5, dash: [2, 3] },
        ],
      },
      [curve.steps, curve.policy, flat(curve.teacher), flat(curve.bestHeuristic)],
      element,
    );
    const observer = new ResizeObserver(() => chart.setSize({ width: element.clientWidth, height }));
    observer.observe(element);
    return () => {
      observer.disconnect();
      chart.destroy();
    };
  }, [curve, height]);

  return <div ref={container} className="chart" data-testid="learning-curve" />;
}
