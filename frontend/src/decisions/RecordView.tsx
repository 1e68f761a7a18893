import type { ReactNode } from "react";
import { Link } from "react-router";

import type { DecisionRecord, Receipt } from "../api/types";
import { duration, percent, timestamp, usd } from "../lib/format";
import { contributionText, featureLabel, type LearnedWhy, marginText } from "./learned";
import { ProbeNoteView, SplitNoteView } from "./ReceiptNotes";

function yesNo(value: boolean | null | undefined): string {
  return value == null ? "—" : value ? "yes" : "no";
}

/** Why a trained scorer preferred the pick: the features that moved it over the runner-up
 *  the most, by integrated gradients (optimizer/decide/explain_learned.py). */
function LearnedWhyView({ why }: { why: LearnedWhy }) {
  return (
    <div className="learned-why" data-testid="learned-why">
      <h3>What moved the learned scorer</h3>
      <p className="small">{marginText(why)}</p>
      <table className="table dense">
        <thead>
          <tr>
            <th>Feature</th><th className="num">Pick</th><th className="num">Runner-up</th><th className="num">Pushed towards</th>
          </tr>
        </thead>
        <tbody>
          {why.features.map((f) => (
            <tr key={f.feature} data-feature={f.feature}>
              <td title={f.feature}>{featureLabel(f.feature)}</td>
              <td className="num">{f.pick}</td>
              <td className="num">{f.runner_up}</td>
              <td className={`num ${f.contribution >= 0 ? "" : "level-warn"}`}>{contributionText(f.contribution)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="small muted">
        Integrated gradients (Sundararajan et al., 2017) along the line from the runner-up's features to the
        pick's, {why.steps} steps, the candidate set's pooled context held fixed: the contributions of all
        features add up to the network's margin (here up to {Math.abs(why.residual).toFixed(3)}).
      </p>
    </div>
  );
}

/** Why this node: the top candidates the engine scored, in rank order, and how many nodes
 *  each constraint ruled out (the record's receipt, kept for every decision). */
function ReceiptView({ receipt, picked }: { receipt: Receipt; picked: string }) {
  const candidates = receipt.candidates ?? [];
  const rejected = Object.entries(receipt.rejected ?? {}).sort((a, b) => b[1] - a[1]);
  if (candidates.length === 0) {
    return <p className="small muted">No receipt: this decision was recorded before receipts were kept.</p>;
  }
  return (
    <div className="receipt" data-testid="receipt">
      <h3>Why {picked}</h3>
      <table className="table dense">
        <thead>
          <tr>
            <th>#</th><th>Node</th><th className="num">Score</th><th className="num">TTFT est.</th>
            <th className="num">E2E est.</th><th className="num">Cost est.</th><th className="num">KV</th>
            <th className="num">Queue</th>
          </tr>
        </thead>
        <tbody>
          {candidates.map((c, i) => (
            <tr key={c.node} className={c.node === picked ? "selected" : ""} data-candidate={c.node}>
              <td>{i + 1}</td>
              <td className="mono">{c.node}</td>
              <td className="num">{c.score.toFixed(3)}</td>
              <td className="num">{duration(c.ttft_ms)}</td>
              <td className="num">{duration(c.e2e_ms)}</td>
              <td className="num">{usd(c.cost_usd, 5)}</td>
              <td className="num">{percent(c.kv_used, 0)}</td>
              <td className="num">{c.queue}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {receipt.split && <SplitNoteView split={receipt.split} decode={picked} />}
      {receipt.probe && <ProbeNoteView probe={receipt.probe} />}
      {receipt.against_runner_up && (
        <p className="small level-warn" data-testid="receipt-worse">{receipt.against_runner_up.text}</p>
      )}
      {receipt.learned && <LearnedWhyView why={receipt.learned} />}
      {receipt.picked_in_breach && (
        <p className="small level-bad" data-testid="receipt-breach">
          {picked} was picked while in an open {receipt.picked_in_breach.severity || "SLA"} breach of{" "}
          {receipt.picked_in_breach.slo} (#{receipt.picked_in_breach.breach_id}, open since{" "}
          {timestamp(receipt.picked_in_breach.opened_at)}
          {receipt.picked_in_breach.open_breaches > 1 && `, one of ${receipt.picked_in_breach.open_breaches}`}).
        </p>
      )}
      <p className="small" data-testid="receipt-rejected">
        {rejected.length === 0
          ? "No node was ruled out."
          : `Ruled out: ${rejected.map(([reason, n]) => `${n} ${reason.replaceAll("_", " ")}`).join(", ")}.`}
      </p>
    </div>
  );
}

function nodeLink(name: string): ReactNode {
  return <Link to={`/nodes/${encodeURIComponent(name)}`}>{name}</Link>;
}

/** Where the decision went: one node, or a split decision's decode node and the prefill node
 *  beside it (issue #30; the record's `prefill_node`, the receipt's site for it), and the probe
 *  that answered instead of the policy (issue #26; the record's `probe`, the receipt's note). */
function placementRows(record: DecisionRecord): [string, ReactNode][] {
  const split = record.receipt.split;
  const probe = record.receipt.probe;
  const rows: [string, ReactNode][] = [];
  if (record.prefill_node) {
    const site = split?.prefill_node === record.prefill_node ? ` (site ${split.prefill_site})` : "";
    rows.push(["Prefill node", <>{nodeLink(record.prefill_node)}{site}</>]);
    rows.push(["Decode node", nodeLink(record.node)]);
  } else rows.push(["Node", nodeLink(record.node)]);
  rows.push(["Site", record.node_site]);
  if (record.probe != null) {
    const pick = probe?.id === record.probe ? `, instead of the policy's pick ${probe.policy_pick}` : "";
    rows.push(["Probe", `#${record.probe}${pick}`]);
  }
  return rows;
}

/** A loaded decision record: its receipt, then its properties (the panel's body). */
export function DecisionRecordView({ record }: { record: DecisionRecord }) {
  const fallbacks = Array.isArray(record.fallbacks) ? (record.fallbacks as string[]) : [];
  const rows: [string, ReactNode][] = [
    ["Decided", timestamp(record.created_at)],
    ["Request", `${record.model} · ${record.prompt_tokens} prompt / ${record.max_output_tokens} output tokens`],
    ["From", `${record.source || "—"} (site ${record.source_site})`],
    ["SLO", record.slo || "—"],
    ...placementRows(record),
    ["Fallbacks", fallbacks.length ? fallbacks.join(" → ") : "—"],
    ["Policy", `${record.policy_name}@${record.policy_version} (${record.arm ?? "active"} arm)`],
    ["Degraded", record.degraded || "no"],
    ["Shadow pick", record.shadow_node ? `${record.shadow_node} (${record.shadow_policy})` : "—"],
    ["Decision time", `${record.latency_us.toFixed(0)} µs`],
    ["Outcome", record.outcome_at ? `ok: ${yesNo(record.ok)} · SLO met: ${yesNo(record.slo_met)}` : "not reported yet"],
    ["TTFT / E2E", `${duration(record.ttft_ms)} / ${duration(record.e2e_ms)}`],
  ];
  return (
    <>
      <ReceiptView receipt={record.receipt} picked={record.node} />
      <dl className="properties">
        {rows.map(([term, value]) => (
          <div key={term}>
            <dt>{term}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
    </>
  );
}
