// The fleet time-series page's charts, built from GET /api/v1/series/fleet (docs/dashboard.md).
import type { FleetSeries } from "../api/types";
import type { ChartMark, SeriesChartProps } from "../components/SeriesChart";
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

/** One cursor for every fleet chart: hovering one shows the same moment on all. */
export const FLEET_SYNC = "fleet-series";

type SeriesEvent = FleetSeries["events"][number];

const EVENT_TONE: Record<SeriesEvent["kind"], ChartMark["tone"]> = {
  drain: "warn",
  cordon: "warn",
  mark_down: "bad",
  uncordon: "ok",
  breaker: "bad",
  breach_open: "bad",
  breach_resolved: "ok",
};

/** A chart mark for an event: "drain fra-h100-1", "breach open interactive"; a breaker move
 *  closing is good news, opening bad. */
export function eventMark(e: SeriesEvent): ChartMark {
  const closing = e.kind === "breaker" && /→ closed/.test(e.text);
  return {
    t: e.t,
    label: `${e.kind.replace("_", " ")} ${e.subject}`,
    tone: closing ? "ok" : EVENT_TONE[e.kind],
  };
}

/** Rollout moves and fleet events, oldest first, as every fleet chart marks them. */
export function fleetMarks(data: Pick<FleetSeries, "marks" | "events">): ChartMark[] {
  const rollout: ChartMark[] = data.marks.map((m) => ({ t: m.t, label: `${m.kind} ${m.policy}`, tone: "info" }));
  return [...rollout, ...(data.events ?? []).map(eventMark)].sort((a, b) => a.t - b.t);
}

export function fleetCharts(data: FleetSeries): ChartSpec[] {
  const marks = fleetMarks(data);
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
      syncKey: FLEET_SYNC,
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
      syncKey: FLEET_SYNC,
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
      syncKey: FLEET_SYNC,
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
      syncKey: FLEET_SYNC,
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
      syncKey: FLEET_SYNC,
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
      syncKey: FLEET_SYNC,
    },
  ];
}
