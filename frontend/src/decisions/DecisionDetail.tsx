import { useEffect, useState, type ReactNode } from "react";
import { Link } from "react-router";

import { ApiError } from "../api/client";
import { getDecision } from "../api/ops";
import type { DecisionRecord } from "../api/types";
import { ErrorBanner } from "../components/ErrorBanner";
import { dateTime, duration } from "../lib/format";

// Records are written in batches off the request thread (every ~0.2 s), so a decision seen on
// the stream may not be in the log yet: retry a 404 a few times before giving up.
const RETRIES = 6;
const RETRY_MS = 500;

function yesNo(value: boolean | null | undefined): string {
  return value == null ? "—" : value ? "yes" : "no";
}

export function DecisionDetail({ id, onClose }: { id: string; onClose: () => void }) {
  const [record, setRecord] = useState<DecisionRecord>();
  const [error, setError] = useState<unknown>();

  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    setRecord(undefined);
    setError(undefined);
    const load = (attempt: number) => {
      getDecision(id)
        .then((r) => live && setRecord(r))
        .catch((e: unknown) => {
          if (!live) return;
          if (e instanceof ApiError && e.status === 404 && attempt < RETRIES) {
            timer = setTimeout(() => load(attempt + 1), RETRY_MS);
          } else setError(e);
        });
    };
    load(0);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [id]);

  let body: ReactNode;
  if (error) body = <ErrorBanner error={error} />;
  else if (!record) body = <p className="muted small">Loading the record…</p>;
  else {
    const fallbacks = Array.isArray(record.fallbacks) ? (record.fallbacks as string[]) : [];
    const rows: [string, ReactNode][] = [
      ["Decided", dateTime(record.created_at)],
      ["Request", `${record.model} · ${record.prompt_tokens} prompt / ${record.max_output_tokens} output tokens`],
      ["From", `${record.source || "—"} (site ${record.source_site})`],
      ["SLO", record.slo || "—"],
      ["Node", <Link to={`/nodes/${encodeURIComponent(record.node)}`}>{record.node}</Link>],
      ["Site", record.node_site],
      ["Fallbacks", fallbacks.length ? fallbacks.join(" → ") : "—"],
      ["Policy", `${record.policy_name}@${record.policy_version} (${record.arm ?? "active"} arm)`],
      ["Degraded", record.degraded || "no"],
      ["Shadow pick", record.shadow_node ? `${record.shadow_node} (${record.shadow_policy})` : "—"],
      ["Decision time", `${record.latency_us.toFixed(0)} µs`],
      ["Outcome", record.outcome_at ? `ok: ${yesNo(record.ok)} · SLO met: ${yesNo(record.slo_met)}` : "not reported yet"],
      ["TTFT / E2E", `${duration(record.ttft_ms)} / ${duration(record.e2e_ms)}`],
    ];
    body = (
      <dl className="properties">
        {rows.map(([term, value]) => (
          <div key={term}>
            <dt>{term}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
    );
  }

  return (
    <section className="panel" data-testid="decision-detail" aria-label="Decision record">
      <header className="panel-header">
        <h2>
          Decision <code className="small">{id}</code>
        </h2>
        <button type="button" className="button ghost" onClick={onClose}>
          Close
        </button>
      </header>
      {body}
      <p className="small muted">
        The log keeps what was decided, not why: use “Explain a request” to see every candidate’s
        score for a request like this one.
      </p>
    </section>
  );
}
