import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

import { timestamp } from "../lib/format";
import { axes, cssVar, tzDate } from "./chartAxes";

export interface SeriesLine {
  label: string;
  /** One value per time of `t`; null is no data and is drawn as a gap. */
  values: (number | null)[];
}

export interface Threshold {
  value: number;
  label: string;
}

/** A moment marked across the chart (a policy rollout move). */
export interface ChartMark {
  t: number;
  label: string;
  /** The colour: rollout moves are `info`; drains and cordons `warn`; breaker trips and
   *  breaches opening `bad`; breaches resolving `ok`. */
  tone?: "info" | "warn" | "bad" | "ok";
}

export interface SeriesChartProps {
  /** Bucket starts, epoch seconds. */
  t: number[];
  lines: SeriesLine[];
  /** A log scale, for figures that span orders of magnitude (values ≤ 0 become gaps). */
  log?: boolean;
  thresholds?: Threshold[];
  marks?: ChartMark[];
  format?: (value: number) => string;
  range?: [number, number];
  height?: number;
  /** Charts with the same key share one cursor: hovering one shows the same moment on all. */
  syncKey?: string;
}

const PALETTE = ["--accent", "--warn", "--info", "--ok", "--bad"];

/** Draws thresholds (dashed, labelled at the right) and marks (vertical, labelled at the
 *  top) over the plot area, after uPlot has drawn the series. */
function overlay(thresholds: Threshold[], marks: ChartMark[]): uPlot.Plugin {
  return {
    hooks: {
      draw: (u: uPlot) => {
        const { ctx, bbox } = u;
        const ratio = window.devicePixelRatio || 1;
        ctx.save();
        ctx.font = `${11 * ratio}px system-ui, sans-serif`;
        ctx.lineWidth = ratio;
        ctx.strokeStyle = cssVar("--bad");
        ctx.fillStyle = cssVar("--bad");
        ctx.setLineDash([6 * ratio, 4 * ratio]);
        ctx.textAlign = "left"; // recent data sits at the right: label thresholds at the left
        for (const th of thresholds) {
          const y = u.valToPos(th.value, "y", true);
          if (y < bbox.top || y > bbox.top + bbox.height) continue;
          ctx.beginPath();
          ctx.moveTo(bbox.left, y);
          ctx.lineTo(bbox.left + bbox.width, y);
          ctx.stroke();
          ctx.fillText(th.label, bbox.left + 4 * ratio, y - 3 * ratio);
        }
        ctx.setLineDash([2 * ratio, 3 * ratio]);
        for (const [i, mark] of marks.entries()) {
          const x = u.valToPos(mark.t, "x", true);
          if (x < bbox.left || x > bbox.left + bbox.width) continue;
          ctx.strokeStyle = cssVar(`--${mark.tone ?? "info"}`);
          ctx.fillStyle = ctx.strokeStyle;
          ctx.beginPath();
          ctx.moveTo(x, bbox.top);
          ctx.lineTo(x, bbox.top + bbox.height);
          ctx.stroke();
          // The label goes on whichever side of the line has room, a line lower per mark so
          // close moves do not print over each other.
          const width = ctx.measureText(mark.label).width;
          const right = x + 3 * ratio + width <= bbox.left + bbox.width;
          ctx.textAlign = right ? "left" : "right";
          const y = bbox.top + (12 + 13 * (i % 3)) * ratio;
          ctx.fillText(mark.label, right ? x + 3 * ratio : x - 3 * ratio, y);
        }
        ctx.restore();
      },
    },
  };
}

/** Fleet-wide series on one time axis, drawn with uPlot in the theme's colours. */
export function SeriesChart(props: SeriesChartProps) {
  const { t, lines, log = false, thresholds = [], marks = [], format, range, height = 190, syncKey } = props;
  const container = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const values = lines.map((line) =>
      log ? line.values.map((v) => (v !== null && v > 0 ? v : null)) : line.values,
    );
    const chart = new uPlot(
      {
        width: element.clientWidth || 400,
        height,
        tzDate,
        legend: { show: true },
        cursor: { drag: { x: false, y: false }, ...(syncKey ? { sync: { key: syncKey } } : {}) },
        scales: {
          x: { time: true },
          y: log ? { distr: 3, log: 10 } : range ? { range } : {},
        },
        axes: axes(format, log),
        series: [
          { value: (_u: uPlot, v: number | null) => (v == null ? "—" : timestamp(v * 1000)) },
          ...lines.map((line, i) => ({
            label: line.label,
            stroke: cssVar(PALETTE[i % PALETTE.length]!),
            width: 1.5,
            spanGaps: false,
            value: (_u: uPlot, v: number | null) => (v == null ? "—" : format ? format(v) : String(v)),
          })),
        ],
        plugins: [overlay(thresholds, marks)],
      },
      [t, ...values] as uPlot.AlignedData,
      element,
    );
    const observer = new ResizeObserver(() => chart.setSize({ width: element.clientWidth, height }));
    observer.observe(element);
    return () => {
      observer.disconnect();
      chart.destroy();
    };
  }, [t, lines, log, thresholds, marks, format, range, height, syncKey]);

  return <div ref={container} className="chart" />;
}
