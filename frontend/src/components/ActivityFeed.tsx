import type { LiveEvent } from "../live/stream";
import { useActivity } from "../live/context";
import { timestamp } from "../lib/format";

function describe(event: LiveEvent): string {
  const f = (key: string) => String(event[key] ?? "?");
  switch (event.type) {
    case "node.state":
      return `${f("node")}: ${event.previous ? `${f("previous")} → ` : ""}${f("state")}${event.by ? ` by ${f("by")}` : ""}`;
    case "node.freshness":
      return `${f("node")}: telemetry ${event.fresh ? "fresh" : "stale"}`;
    case "decision":
      return `${f("model")} → ${f("node")} (${f("policy")})`;
    case "decision.summary":
      return `${f("total")} decisions in ${f("window_s")} s`;
    case "breach":
      return `${f("slo")} ${f("severity")} breach ${f("status")}: ${f("metric")}${Array.isArray(event.nodes) && event.nodes.length ? ` (${event.nodes.join(", ")})` : ""}`;
    case "training.progress":
      return `training run ${f("run_id")}: ${f("status")}`;
    case "policy.transition":
      return `${f("name")} ${f("version")}: ${f("from_state")} → ${f("to_state")}`;
    default:
      return "";
  }
}

function timeOf(event: LiveEvent): string {
  return typeof event.ts === "string" ? timestamp(event.ts) : "";
}

export function ActivityFeed() {
  const activity = useActivity();
  return (
    <aside className="activity" aria-label="Live activity" data-testid="activity-feed">
      <h2>Activity</h2>
      {activity.length === 0 ? (
        <p className="muted small">Live events appear here as they happen.</p>
      ) : (
        <ol>
          {activity.map((event, i) => (
            <li key={activity.length - i} data-type={event.type}>
              <span className="activity-type">{event.type}</span>
              <span className="activity-text">{describe(event)}</span>
              <time className="muted">{timeOf(event)}</time>
            </li>
          ))}
        </ol>
      )}
    </aside>
  );
}
