import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface ScatterSeries {
  label: string;
  values: number[];
}

const PALETTE = ["--warn", "--accent", "--info", "--ok", "--bad"];

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

/** Points (no lines) of each series against a shared ascending x, plus the y = x diagonal:
 *  predicted against observed, where a perfect twin lies on the diagonal. Log axes. */
export function ScatterChart({
  x,
  series,
  xLabel,
  yLabel,
  height = 280,
}: {
  x: number[];
  series: ScatterSeries[];
  xLabel: string;
  yLabel: string;
  height?: number;
}) {
  const container = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const element = container.current;
    if (!element || x.length === 0) return;
    const axis = { stroke: cssVar("--muted"), grid: { stroke: cssVar("--grid") } };
    const chart = new uPlot(
      {
        width: element.clientWidth || 400,
        height,
        legend: { live: false },
        scales: { x: { time: false, distr: 3 }, y: { distr: 3 } },
        axes: [
          { ...axis, label: xLabel },
          { ...axis, label: yLabel },
        ],
        series: [
          {},
          { label: "y = x", stroke: cssVar("--muted"), width: 1, dash: [4, 4], points: { show: false } },
          ...series.map((s, i) => ({
            label: s.label,
            stroke: cssVar(PALETTE[i % PALETTE.length]!),
            paths: () => null,
            points: { show: true, size: 4, fill: cssVar(PALETTE[i % PALETTE.length]!) },
          })),
        ],
      },
      [x, x, ...series.map((s) => s.values)],
      element,
    );
    const observer = new ResizeObserver(() => chart.setSize({ width: element.clientWidth, height }));
    observer.observe(element);
    return () => {
      observer.disconnect();
      chart.destroy();
    };
  }, [x, series, xLabel, yLabel, height]);

  return <div ref={container} className="chart" data-testid="scatter" />;
}
