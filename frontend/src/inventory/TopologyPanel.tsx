import { useState, type ChangeEvent } from "react";

import { api } from "../api/client";
import { useCan } from "../auth/session";
import { ErrorBanner } from "../components/ErrorBanner";

interface ImportSummary {
  changed: boolean;
  counts: Record<string, Record<string, number>>;
}

/** Export the inventory as a topology file (JSON, which YAML readers accept) and import one. */
async function exportTopology() {
  const response = await api.raw("/api/v1/topology");
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement("a");
  link.href = url;
  link.download = "topology.json";
  link.click();
  URL.revokeObjectURL(url);
}

function Summary({ summary }: { summary: ImportSummary }) {
  return (
    <div className="notice" role="status">
      {summary.changed ? "Imported." : "Nothing changed."}{" "}
      {Object.entries(summary.counts)
        .map(([kind, counts]) => `${kind}: ${Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ")}`)
        .join(" · ")}
    </div>
  );
}

export function TopologyPanel() {
  const canEdit = useCan("edit-inventory");
  const [text, setText] = useState("");
  const [prune, setPrune] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [summary, setSummary] = useState<ImportSummary>();

  async function readFile(event: ChangeEvent<HTMLInputElement>) {
    const file = event.target.files?.[0];
    if (file) setText(await file.text());
  }

  async function submit() {
    setBusy(true);
    setError(undefined);
    setSummary(undefined);
    try {
      setSummary(
        await api.request<ImportSummary>("/api/v1/topology", {
          method: "PUT",
          body: text,
          contentType: "application/yaml",
          query: { prune: prune ? "true" : undefined },
        }),
      );
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="panel" data-resource="topology">
      <header className="panel-header">
        <h2>Topology file</h2>
        <button type="button" className="button" onClick={() => exportTopology().catch(setError)}>
          Export
        </button>
      </header>
      {canEdit && (
        <>
          <p className="muted small">
            Import a topology (YAML, version 1). Entries are matched by name and updated in place; a
            file with any error imports nothing.
          </p>
          <input type="file" accept=".yaml,.yml,.json" onChange={readFile} />
          <textarea
            className="code"
            rows={14}
            value={text}
            onChange={(e) => setText(e.target.value)}
            placeholder="version: 1&#10;sites: …"
            aria-label="Topology YAML"
          />
          <div className="button-row">
            <label className="checkbox">
              <input type="checkbox" checked={prune} onChange={(e) => setPrune(e.target.checked)} />
              Delete entries the file does not list
            </label>
            <button type="button" className="button primary" disabled={busy || !text.trim()} onClick={submit}>
              Import
            </button>
          </div>
        </>
      )}
      <ErrorBanner error={error} />
      {summary && <Summary summary={summary} />}
    </section>
  );
}
