// Axis settings every uPlot chart shares: time in UTC like every other time on screen
// (lib/format.ts), and tick spacing wide enough that labels never overlap (uPlot's `space` is
// the minimum pixels between ticks; a time label such as "11/24 15:00" needs about 80).
import uPlot from "uplot";

import { TIME_ZONE } from "../lib/format";

export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

export const tzDate = (ts: number): Date => uPlot.tzDate(new Date(ts * 1000), `Etc/${TIME_ZONE}`);

/** An x (time) axis and a y axis of `size` pixels whose labels come from `format`. */
export function axes(format?: (value: number) => string, size = 60): uPlot.Axis[] {
  const stroke = cssVar("--muted");
  const grid = { stroke: cssVar("--grid"), width: 1 };
  return [
    { stroke, grid, space: 90, label: TIME_ZONE, labelSize: 16, labelGap: 0 },
    {
      stroke,
      grid,
      size,
      space: 28,
      ...(format ? { values: (_u: uPlot, splits: number[]) => splits.map(format) } : {}),
    },
  ];
}
