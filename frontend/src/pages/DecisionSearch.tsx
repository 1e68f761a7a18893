import { useEffect, useState, type FormEvent } from "react";
import { Link, useSearchParams } from "react-router";

import { listNodes } from "../api/nodes";
import { listDecisions, listModels, listSlos } from "../api/ops";
import { ErrorBanner } from "../components/ErrorBanner";
import {
  EMPTY_SEARCH,
  PAGE_SIZE,
  pageLabel,
  searchFromUrl,
  searchQuery,
  searchToUrl,
  toInstant,
  toLocalInput,
  type Search,
} from "../decisions/search";
import { useAsync } from "../hooks/useAsync";
import { timestamp } from "../lib/format";

function Choice({ label, name, value, options, onChange }: {
  label: string;
  name: keyof Search;
  value: string;
  options: string[];
  onChange: (value: string) => void;
}) {
  return (
    <label className="field">
      <span>{label}</span>
      <select name={name} value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">any</option>
        {/* A value no longer in the inventory (a removed node) stays searchable. */}
        {value && !options.includes(value) && <option>{value}</option>}
        {options.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    </label>
  );
}

/** Every stored decision, searched on the server: by id, node, model, SLO, policy, arm and
 *  time range, a page at a time. The search lives in the URL, so it is a link. */
export default function DecisionSearch() {
  const [params, setParams] = useSearchParams();
  const search = searchFromUrl(params);
  const [form, setForm] = useState<Search>(search);
  useEffect(() => setForm({ ...search, from: toLocalInput(search.from), to: toLocalInput(search.to) }), [params]);

  const nodes = useAsync(() => listNodes().then((p) => p.results.map((n) => n.name).sort()), []);
  const slos = useAsync(() => listSlos().then((p) => p.results.map((s) => s.name).sort()), []);
  const models = useAsync(() => listModels().then((p) => p.results.map((m) => m.name).sort()), []);

  const { query, problems } = searchQuery(search);
  const valid = Object.keys(problems).length === 0;
  const results = useAsync(
    () => (valid ? listDecisions(query) : Promise.resolve(undefined)),
    [params.toString()],
  );
  const formProblems = searchQuery({ ...form, from: toInstant(form.from) ?? form.from, to: toInstant(form.to) ?? form.to }).problems;

  const set = (field: keyof Search) => (value: string) => setForm((f) => ({ ...f, [field]: value }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (Object.keys(formProblems).length > 0) return;
    const next = { ...form, page: 0, from: toInstant(form.from) ?? "", to: toInstant(form.to) ?? "" };
    setParams(searchToUrl(next));
  };
  const goTo = (page: number) => setParams(searchToUrl({ ...search, page }));

  const page = results.data;
  const rows = page?.results ?? [];
  const count = page?.count ?? 0;
  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>Find decisions</h1>
          <p className="muted small">
            Every stored decision record, searched on the server ({PAGE_SIZE} a page). The{" "}
            <Link to="/decisions">live feed</Link> shows a sample of what happens now.
          </p>
        </div>
      </header>
      <form className="panel search-form" aria-label="Search decisions" onSubmit={submit}>
        <label className="field">
          <span>Decision id</span>
          <input name="id" value={form.id} onChange={(e) => set("id")(e.target.value.trim())} placeholder="exact id" />
        </label>
        <Choice label="Node" name="node" value={form.node} options={nodes.data ?? []} onChange={set("node")} />
        <Choice label="Model" name="model" value={form.model} options={models.data ?? []} onChange={set("model")} />
        <Choice label="SLO" name="slo" value={form.slo} options={slos.data ?? []} onChange={set("slo")} />
        <label className="field">
          <span>Policy</span>
          <input name="policy" value={form.policy} onChange={(e) => set("policy")(e.target.value.trim())} placeholder="name or name@version" />
          {formProblems.policy && <span className="field-error">{formProblems.policy}</span>}
        </label>
        <Choice label="Arm" name="arm" value={form.arm} options={["active", "canary"]} onChange={set("arm")} />
        <label className="field">
          <span>From</span>
          <input type="datetime-local" step={1} name="from" value={form.from} onChange={(e) => set("from")(e.target.value)} />
          {formProblems.from && <span className="field-error">{formProblems.from}</span>}
        </label>
        <label className="field">
          <span>To</span>
          <input type="datetime-local" step={1} name="to" value={form.to} onChange={(e) => set("to")(e.target.value)} />
          {formProblems.to && <span className="field-error">{formProblems.to}</span>}
        </label>
        <div className="search-actions">
          <button type="submit" className="button primary">Search</button>
          <button type="button" className="button ghost" onClick={() => setParams(searchToUrl(EMPTY_SEARCH))}>
            Clear
          </button>
        </div>
      </form>
      <ErrorBanner error={results.error ?? nodes.error} />
      <section className="panel" aria-label="Matching decisions">
        <header className="panel-header">
          <h2>Decisions</h2>
          <span className="small muted" data-testid="search-count">
            {results.loading ? "Searching…" : page ? pageLabel(search.page, rows.length, count) : ""}
          </span>
        </header>
        <div className="table-scroll">
          <table className="table dense" data-testid="search-results">
            <thead>
              <tr>
                <th>Time</th><th>Decision</th><th>Node</th><th>Model</th><th>SLO</th><th>Policy</th>
                <th>Arm</th><th>Outcome</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id} data-decision={r.id}>
                  <td>{timestamp(r.created_at)}</td>
                  <td className="mono small"><Link to={`/decisions/${encodeURIComponent(r.id)}`}>{r.id}</Link></td>
                  <td className="mono"><Link to={`/nodes/${encodeURIComponent(r.node)}`}>{r.node}</Link></td>
                  <td>{r.model}</td>
                  <td>{r.slo || "—"}</td>
                  <td className="mono small">{r.policy_name}@{r.policy_version}</td>
                  <td>{r.arm}</td>
                  <td>{r.outcome_at == null ? "—" : r.slo_met ? "met" : r.ok === false ? "failed" : "missed"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <footer className="pager">
          <button type="button" className="button" disabled={search.page === 0} onClick={() => goTo(search.page - 1)}>
            Newer
          </button>
          <button
            type="button"
            className="button"
            disabled={(search.page + 1) * PAGE_SIZE >= count}
            onClick={() => goTo(search.page + 1)}
          >
            Older
          </button>
        </footer>
      </section>
    </div>
  );
}
