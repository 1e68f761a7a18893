import { useState, type FormEvent } from "react";

import { ApiError } from "../api/client";
import { explainPlacement, listModels, listSlos, listSources } from "../api/ops";
import type { PlacementAnswer } from "../api/types";
import { ErrorBanner } from "../components/ErrorBanner";
import { useAsync } from "../hooks/useAsync";
import { duration, usd } from "../lib/format";

function parseHashes(text: string): number[] {
  return text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(Number)
    .filter(Number.isInteger);
}

function Answer({ answer }: { answer: PlacementAnswer }) {
  const candidates = answer.candidates ?? [];
  const rejected = answer.rejected ?? [];
  return (
    <div className="explain-answer" data-testid="explain-answer">
      <p>
        Chose <strong>{answer.node}</strong> ({answer.site})
        {answer.fallbacks.length > 0 && <> · fallbacks {answer.fallbacks.join(" → ")}</>} · policy{" "}
        {answer.policy.name}@{answer.policy.version} ({answer.arm} arm)
        {answer.degraded && <span className="warn"> · degraded: {answer.degraded}</span>}
      </p>
      <div className="table-scroll">
        <table className="table dense">
          <thead>
            <tr>
              <th>#</th>
              <th>Node</th>
              <th>Tier</th>
              <th className="num">Score</th>
              <th className="num">Est. TTFT</th>
              <th className="num">Est. E2E</th>
              <th className="num">Est. cost</th>
              <th className="num">Queue</th>
              <th className="num">Running</th>
              <th className="num">KV used</th>
              <th className="num">Prefix blocks</th>
              <th className="num">Telemetry age</th>
            </tr>
          </thead>
          <tbody>
            {candidates.map((c) => (
              <tr key={c.node} className={c.node === answer.node ? "chosen" : ""}>
                <td>{c.rank}</td>
                <td>
                  {c.node} <span className="muted small">{c.site}</span>
                </td>
                <td>{c.tier}</td>
                <td className="num">{c.score.toFixed(3)}</td>
                <td className="num">{duration(c.estimated_ttft_ms)}</td>
                <td className="num">{duration(c.estimated_e2e_ms)}</td>
                <td className="num">{usd(c.estimated_cost_usd, 5)}</td>
                <td className="num">{c.queue_depth}</td>
                <td className="num">{c.running}</td>
                <td className="num">{Math.round(c.kv_used_fraction * 100)}%</td>
                <td className="num">{c.prefix_blocks}</td>
                <td className="num">{c.telemetry_age_s == null ? "none" : `${c.telemetry_age_s.toFixed(1)} s`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {rejected.length > 0 && (
        <>
          <h3>Rejected</h3>
          <ul className="rejected" data-testid="rejected">
            {rejected.map((r) => (
              <li key={r.node}>
                <strong>{r.node}</strong>: {r.reason}
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

/** A 503's reasons: why each node was ruled out when none may serve the request. */
function unplaceableReasons(error: unknown): [string, string][] {
  if (!(error instanceof ApiError) || error.status !== 503) return [];
  const body = error.body as { reasons?: Record<string, string> } | undefined;
  return Object.entries(body?.reasons ?? {});
}

/** POST /placements with explain: true (operators and admins; the page hides it from viewers). */
export function ExplainPanel() {
  const options = useAsync(
    () =>
      Promise.all([listModels(), listSources(), listSlos()]).then(([m, s, l]) => ({
        models: m.results.map((x) => x.name),
        sources: s.results.map((x) => x.name),
        slos: l.results.map((x) => x.name),
      })),
    [],
  );
  const [form, setForm] = useState({
    model: "",
    source: "",
    slo: "",
    prompt_tokens: "1800",
    max_output_tokens: "256",
    prefix_hashes: "",
  });
  const [answer, setAnswer] = useState<PlacementAnswer>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const set = (key: keyof typeof form) => (e: { target: { value: string } }) =>
    setForm((f) => ({ ...f, [key]: e.target.value }));

  const models = options.data?.models ?? [];
  const sources = options.data?.sources ?? [];
  const model = form.model || models[0] || "";
  const source = form.source || sources[0] || "";

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const hashes = parseHashes(form.prefix_hashes);
      setAnswer(
        await explainPlacement({
          model,
          source,
          ...(form.slo ? { slo: form.slo } : {}),
          prompt_tokens: Number(form.prompt_tokens),
          max_output_tokens: Number(form.max_output_tokens),
          ...(hashes.length ? { prefix_hashes: hashes } : {}),
        }),
      );
    } catch (err) {
      setAnswer(undefined);
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="panel" data-testid="explain-panel">
      <h2>Explain a request</h2>
      <form className="form-grid compact" onSubmit={submit} aria-label="Explain a request">
        <label className="field">
          <span>Model</span>
          <select value={model} onChange={set("model")}>
            {models.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Source</span>
          <select value={source} onChange={set("source")}>
            {sources.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>SLO</span>
          <select value={form.slo} onChange={set("slo")}>
            <option value="">the source’s</option>
            {(options.data?.slos ?? []).map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Prompt tokens</span>
          <input type="number" min={0} value={form.prompt_tokens} onChange={set("prompt_tokens")} />
        </label>
        <label className="field">
          <span>Max output tokens</span>
          <input type="number" min={1} value={form.max_output_tokens} onChange={set("max_output_tokens")} />
        </label>
        <label className="field">
          <span>Prefix block hashes</span>
          <input placeholder="11, 12, 13" value={form.prefix_hashes} onChange={set("prefix_hashes")} />
        </label>
        <div className="button-row">
          <button type="submit" className="button primary" disabled={busy || !model || !source}>
            Explain
          </button>
          <span className="small muted">
            A real decision: it is logged and counted, but nothing is sent to the node.
          </span>
        </div>
      </form>
      <ErrorBanner error={options.error ?? error} />
      {unplaceableReasons(error).length > 0 && (
        <ul className="rejected" data-testid="rejected">
          {unplaceableReasons(error).map(([node, reason]) => (
            <li key={node}>
              <strong>{node}</strong>: {reason}
            </li>
          ))}
        </ul>
      )}
      {answer && <Answer answer={answer} />}
    </section>
  );
}
