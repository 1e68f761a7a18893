import { useState } from "react";

import { createApiKey, listApiKeys, revokeApiKey } from "../api/keys";
import type { ApiKey, IssuedApiKey } from "../api/types";
import { useCan } from "../auth/session";
import { EmptyState } from "../components/EmptyState";
import { ErrorBanner } from "../components/ErrorBanner";
import { FormPanel, useSubmit } from "../components/FormPanel";
import { useAsync } from "../hooks/useAsync";
import { timestamp } from "../lib/format";

const ROLES = ["service", "viewer", "operator", "admin"];

/** `owner` is added by the API when keys record who owns them; shown when present. */
type Listed = ApiKey & { owner?: string | null };

function IssuedKey({ issued, onDismiss }: { issued: IssuedApiKey; onDismiss: () => void }) {
  return (
    <section className="panel notice-panel" data-testid="issued-key" aria-label="New API key">
      <h2>Key “{issued.name}” created</h2>
      <p className="small">
        Copy it now: it is shown <strong>once</strong> and only its digest is stored.
      </p>
      <code className="secret" data-testid="issued-secret">{issued.key}</code>
      <div className="button-row">
        <button
          type="button"
          className="button"
          onClick={() => void navigator.clipboard?.writeText(issued.key)}
        >
          Copy
        </button>
        <button type="button" className="button ghost" onClick={onDismiss}>
          I have stored it
        </button>
      </div>
    </section>
  );
}

function KeyRow({ apiKey, onRevoked }: { apiKey: Listed; onRevoked: (key: ApiKey) => void }) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  async function revoke() {
    if (!window.confirm(`Revoke “${apiKey.name}”? Calls with it fail from now on.`)) return;
    setBusy(true);
    try {
      onRevoked(await revokeApiKey(apiKey.id));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }
  const revoked = apiKey.revoked_at != null;
  return (
    <tr data-key={apiKey.name} className={revoked ? "dim" : ""}>
      <td className="mono">{apiKey.name}</td>
      <td>{apiKey.role}</td>
      <td>{apiKey.owner ?? "—"}</td>
      <td className="mono small">{apiKey.prefix}</td>
      <td className="small">{timestamp(apiKey.created_at)}</td>
      <td className="small">{timestamp(apiKey.last_used_at)}</td>
      <td className="small" data-testid="key-status">
        {revoked ? `revoked ${timestamp(apiKey.revoked_at)}` : "active"}
      </td>
      <td>
        {!revoked && (
          <button type="button" className="button danger" disabled={busy} onClick={revoke}>
            Revoke
          </button>
        )}
        <ErrorBanner error={error} />
      </td>
    </tr>
  );
}

/** API keys for services and scripts: issue (shown once), list and revoke. Admins only. */
export default function ApiKeys() {
  const allowed = useCan("manage-keys");
  const keys = useAsync(() => (allowed ? listApiKeys() : Promise.resolve(null)), [allowed]);
  const [name, setName] = useState("");
  const [role, setRole] = useState("service");
  const [issued, setIssued] = useState<IssuedApiKey>();
  const create = useSubmit(
    () => createApiKey({ name: name.trim(), role }),
    (key) => {
      setIssued(key);
      setName("");
      keys.reload();
    },
  );

  if (!allowed) {
    return <EmptyState title="Admins only">Ask an admin to issue or revoke API keys.</EmptyState>;
  }
  const replace = (key: ApiKey) =>
    keys.setData((page) => page && { ...page, results: page.results.map((k) => (k.id === key.id ? key : k)) });

  return (
    <div className="page">
      <header className="page-header">
        <h1>API keys</h1>
        <p className="small muted">
          Services send <code>Authorization: Bearer &lt;key&gt;</code>. A revoked key stops working
          at once here and within 30 s on other server processes.
        </p>
      </header>
      {issued && <IssuedKey issued={issued} onDismiss={() => setIssued(undefined)} />}
      <FormPanel title="Issue a key" submitLabel="Create key" state={create}>
        <label className="field">
          <span>Name</span>
          <input value={name} onChange={(e) => setName(e.target.value)} maxLength={100} required />
        </label>
        <label className="field">
          <span>Role</span>
          <select value={role} onChange={(e) => setRole(e.target.value)}>
            {ROLES.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </label>
      </FormPanel>
      <section className="panel" aria-label="Keys">
        <h2>Keys</h2>
        <ErrorBanner error={keys.error} />
        {keys.data && keys.data.results.length === 0 && <p className="muted small">No keys yet.</p>}
        {keys.data && keys.data.results.length > 0 && (
          <div className="table-scroll">
            <table className="table dense" data-testid="api-keys">
              <thead>
                <tr>
                  <th>Name</th><th>Role</th><th>Owner</th><th>Prefix</th><th>Created</th>
                  <th>Last used</th><th>Status</th><th />
                </tr>
              </thead>
              <tbody>
                {keys.data.results.map((k) => (
                  <KeyRow key={k.id} apiKey={k} onRevoked={replace} />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </div>
  );
}
