import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

import { alignSeries, type Point } from "./alignSeries";
import { axes, cssVar, tzDate } from "./chartAxes";

export interface ChartLine {
  label: string;
  points: Point[];
}

const PALETTE = ["--accent", "--warn", "--info", "--ok", "--bad"];

/** Lines over time, drawn with uPlot in the theme's colours; resizes with its container. */
export function TimeSeriesChart({ lines, height = 180 }: { lines: ChartLine[]; height?: number }) {
  const container = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const chart = new uPlot(
      {
        width: element.clientWidth || 400,
        height,
        legend: { show: lines.length > 1 },
        tzDate,
        axes: axes(),
        series: [
          {},
          ...lines.map((line, i) => ({
            label: line.label,
            stroke: cssVar(PALETTE[i % PALETTE.length]!),
            width: 1.5,
          })),
        ],
      },
      alignSeries(lines.map((line) => line.points)),
      element,
    );
    const observer = new ResizeObserver(() =>
      chart.setSize({ width: element.clientWidth, height }),
    );
    observer.observe(element);
    return () => {
      observer.disconnect();
      chart.destroy();
    };
  }, [lines, height]);

  return <div ref={container} className="chart" />;
}
