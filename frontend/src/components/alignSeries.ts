// uPlot draws series that share one x array: merge several [time, value] lists onto the union
// of their timestamps (seconds), with null where a series has no point (drawn as a gap).

export type Point = [string, number];
export type Aligned = [number[], ...(number | null)[][]];

export function alignSeries(series: Point[][]): Aligned {
  const times = new Set<number>();
  const byTime = series.map((points) => {
    const map = new Map<number, number>();
    for (const [ts, value] of points) {
      const t = Date.parse(ts) / 1000;
      times.add(t);
      map.set(t, value);
    }
    return map;
  });
  const xs = [...times].sort((a, b) => a - b);
  return [xs, ...byTime.map((map) => xs.map((t) => map.get(t) ?? null))];
}
