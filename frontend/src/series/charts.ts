// The fleet time-series page's charts, built from GET /api/v1/series/fleet (docs/dashboard.md).
import type { FleetSeries } from "../api/types";
import type { SeriesChartProps } from "../components/SeriesChart";
import { percent, rate } from "../lib/format";

export interface ChartSpec extends SeriesChartProps {
  key: string;
  title: string;
  note: string;
}

const micros = (v: number) =>
  v >= 1000 ? `${(v / 1000).toFixed(v >= 10_000 ? 0 : 1)} ms` : `${Math.round(v)} µs`;
const share = (v: number) => percent(v, 0);
const count = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(1));
const burn = (v: number) => `${v >= 10 ? v.toFixed(0) : v.toFixed(1)}×`;

export function fleetCharts(data: FleetSeries): ChartSpec[] {
  const marks = data.marks.map((m) => ({ t: m.t, label: `${m.kind} ${m.policy}` }));
  const objectives = [...new Set(data.slos.map((s) => s.objective))];
  return [
    {
      key: "decisions",
      title: "Decisions per second",
      note: `mean per ${data.step} s bucket`,
      t: data.t,
      lines: [{ label: "decisions/s", values: data.decisions_per_s }],
      format: rate,
      marks,
    },
    {
      key: "latency",
      title: "Decision latency (engine time, log scale)",
      note: "mean and slowest decision per bucket; gaps: no decisions",
      t: data.t,
      lines: [
        { label: "mean", values: data.latency_us_mean },
        { label: "max", values: data.latency_us_max },
      ],
      log: true,
      format: micros,
      marks,
    },
    {
      key: "attainment",
      title: "SLO attainment",
      note: "outcomes that met every target of their SLO; dashed: the objective",
      t: data.t,
      lines: data.slos.map((s) => ({ label: s.slo, values: s.attainment })),
      thresholds: objectives.map((o) => ({ value: o, label: `objective ${share(o)}` })),
      range: [0, 1],
      format: share,
      marks,
    },
    {
      key: "burn",
      title: "Error-budget burn rate",
      note: "misses over the budget; above 1× the budget runs out early",
      t: data.t,
      lines: data.slos.map((s) => ({ label: s.slo, values: s.burn_rate })),
      thresholds: [{ value: 1, label: "1× budget pace" }],
      format: burn,
      marks,
    },
    {
      key: "fallbacks",
      title: "Fallbacks and breaker trips",
      note: `per ${data.step} s bucket`,
      t: data.t,
      lines: [
        { label: "fallback decisions", values: data.fallbacks },
        { label: "breaker trips", values: data.breaker_trips },
      ],
      format: count,
      marks,
    },
    {
      key: "prefix",
      title: "Prefix-cache hit rate (fleet mean)",
      note: "from the nodes' exporters; gaps: no telemetry",
      t: data.t,
      lines: [{ label: "hit rate", values: data.prefix_hit_rate }],
      range: [0, 1],
      format: share,
      marks,
    },
  ];
}
