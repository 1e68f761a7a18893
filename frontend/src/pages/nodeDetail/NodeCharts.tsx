import { useMemo } from "react";

import { nodeTelemetry } from "../../api/nodes";
import type { TelemetrySeries } from "../../api/types";
import { EmptyState } from "../../components/EmptyState";
import { ErrorBanner } from "../../components/ErrorBanner";
import { TimeSeriesChart, type ChartLine } from "../../components/TimeSeriesChart";
import { useAsync } from "../../hooks/useAsync";
import { useTimeRange } from "../../hooks/useTimeRange";

/** The canonical node metrics charted (telemetry/mapping/base.py names, canonical units). */
export const CHART_METRICS = [
  { metric: "running", label: "Running requests" },
  { metric: "queue_depth", label: "Queued requests" },
  { metric: "kv_usage", label: "KV-cache usage (0–1)" },
  { metric: "gpu_util", label: "GPU utilisation (0–1)" },
  { metric: "ttft_p95_s", label: "TTFT p95 (s)" },
  { metric: "gen_tokens_per_s", label: "Generated tokens/s" },
];


function linesOf(data: TelemetrySeries): ChartLine[] {
  return data.series
    .filter((s) => s.points.length > 0)
    .map((s) => ({
      label: Object.entries(s.labels).map(([k, v]) => `${k}=${v}`).join(", ") || data.metric,
      points: s.points,
    }));
}

function MetricChart({ node, metric, label, seconds, step }: {
  node: string;
  metric: string;
  label: string;
  seconds: number;
  step: number;
}) {
  const telemetry = useAsync(() => {
    const to = new Date();
    const from = new Date(to.getTime() - seconds * 1000);
    return nodeTelemetry(node, { metric, from: from.toISOString(), to: to.toISOString(), step });
  }, [node, metric, seconds, step]);
  const lines = useMemo(() => (telemetry.data ? linesOf(telemetry.data) : []), [telemetry.data]);

  let body;
  if (telemetry.error) body = <ErrorBanner error={telemetry.error} />;
  else if (telemetry.loading && !telemetry.data) {
    body = <div className="chart-placeholder muted">Loading…</div>;
  } else if (lines.length === 0) {
    body = <EmptyState title="No telemetry">Nothing recorded in this range.</EmptyState>;
  } else body = <TimeSeriesChart lines={lines} />;

  return (
    <figure className="chart-card" data-metric={metric}>
      <figcaption>{label}</figcaption>
      {body}
    </figure>
  );
}

export function NodeCharts({ node }: { node: string }) {
  const [range] = useTimeRange();
  return (
    <section className="panel">
      <header className="panel-header">
        <h2>Telemetry</h2>
        <span className="small muted">last {range.label} (the time range at the top)</span>
      </header>
      <div className="chart-grid">
        {CHART_METRICS.map(({ metric, label }) => (
          <MetricChart
            key={metric}
            node={node}
            metric={metric}
            label={label}
            seconds={range.seconds}
            step={range.step}
          />
        ))}
      </div>
    </section>
  );
}
