// Axis settings every uPlot chart shares: time in UTC like every other time on screen
// (lib/format.ts), and tick spacing wide enough that labels never overlap (uPlot's `space` is
// the minimum pixels between ticks; a time label such as "11/24 15:00" needs about 80).
import uPlot from "uplot";

import { TIME_ZONE } from "../lib/format";

export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

export const tzDate = (ts: number): Date => uPlot.tzDate(new Date(ts * 1000), `Etc/${TIME_ZONE}`);

const CLOCK = new Intl.DateTimeFormat("en-US", {
  timeZone: TIME_ZONE,
  hour: "2-digit",
  minute: "2-digit",
  hourCycle: "h23",
});
const DAY = new Intl.DateTimeFormat("en-US", { timeZone: TIME_ZONE, month: "short", day: "numeric" });

/** Time tick labels in the format of lib/format.ts, 24-hour and UTC: "15:20", with the day
 *  ("Nov 24 15:00") once the axis spans more than a day. */
export function timeTicks(splits: number[]): string[] {
  const span = splits.length > 1 ? splits[splits.length - 1]! - splits[0]! : 0;
  return splits.map((s) => {
    const d = new Date(s * 1000);
    return span > 86_400 ? `${DAY.format(d)} ${CLOCK.format(d)}` : CLOCK.format(d);
  });
}

/** On a log scale uPlot ticks every 1..9 x 10^k; only the powers of ten get a label, so
 *  labels never pile up. */
export function decadeLabels(format: (value: number) => string, splits: number[]): string[] {
  return splits.map((v) => {
    const exponent = Math.log10(v);
    return Math.abs(exponent - Math.round(exponent)) < 1e-9 ? format(v) : "";
  });
}

/** An x (time) axis and a y axis of `size` pixels whose labels come from `format`. */
export function axes(format?: (value: number) => string, log = false, size = 64): uPlot.Axis[] {
  const stroke = cssVar("--muted");
  const grid = { stroke: cssVar("--grid"), width: 1 };
  const label = format ?? ((v: number) => String(Number(v.toPrecision(3))));
  return [
    {
      stroke,
      grid,
      space: 90,
      label: TIME_ZONE,
      labelSize: 16,
      labelGap: 0,
      values: (_u: uPlot, splits: number[]) => timeTicks(splits),
    },
    {
      stroke,
      grid,
      size,
      space: 28,
      // Without a format, uPlot's own labels (decimals fitted to the tick step) serve.
      ...(format || log
        ? {
            values: (_u: uPlot, splits: number[]) =>
              log ? decadeLabels(label, splits) : splits.map(label),
          }
        : {}),
    },
  ];
}
