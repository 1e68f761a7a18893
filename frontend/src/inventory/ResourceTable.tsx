import { useState } from "react";

import { api } from "../api/client";
import { ALL } from "../api/nodes";
import type { Page } from "../api/types";
import { useCan } from "../auth/session";
import { EmptyState } from "../components/EmptyState";
import { ErrorBanner } from "../components/ErrorBanner";
import { useAsync } from "../hooks/useAsync";
import type { Entry } from "./formValues";
import { ResourceForm, type ChoiceLists } from "./ResourceForm";
import { entryLabel, singular, type ResourceSpec } from "./specs";

const CHOICE_SOURCES = ["sites", "slos", "accelerators", "models"] as const;

async function loadChoiceLists(): Promise<ChoiceLists> {
  const pages = await Promise.all(
    CHOICE_SOURCES.map((r) => api.request<Page<{ name: string }>>(`/api/v1/${r}`, { query: ALL })),
  );
  return Object.fromEntries(CHOICE_SOURCES.map((r, i) => [r, pages[i]!.results.map((e) => e.name)]));
}

function cell(value: unknown): string {
  if (value === null || value === undefined || value === "") return "—";
  return Array.isArray(value) ? value.join(", ") : String(value);
}

/** One inventory resource: its entries, and for operators create, edit and delete. */
export function ResourceTable({ spec }: { spec: ResourceSpec }) {
  const canEdit = useCan("edit-inventory");
  const entries = useAsync(() => api.request<Page<Entry>>(spec.path, { query: ALL }), [spec.path]);
  const lists = useAsync(() => (canEdit ? loadChoiceLists() : Promise.resolve({})), [canEdit]);
  const [editing, setEditing] = useState<Entry | null | undefined>(undefined);
  const [deleteError, setDeleteError] = useState<unknown>();

  async function remove(entry: Entry) {
    if (!window.confirm(`Delete ${singular(spec)} ${entryLabel(spec, entry)}?`)) return;
    setDeleteError(undefined);
    try {
      await api.request(`${spec.path}/${encodeURIComponent(String(entry[spec.idField]))}`, {
        method: "DELETE",
      });
      entries.reload();
    } catch (e) {
      setDeleteError(e);
    }
  }

  function saved() {
    setEditing(undefined);
    entries.reload();
    lists.reload();
  }

  const rows = entries.data?.results ?? [];
  return (
    <section data-resource={spec.key}>
      <header className="panel-header">
        <h2>{spec.title}</h2>
        {canEdit && editing === undefined && (
          <button type="button" className="button primary" onClick={() => setEditing(null)}>
            New {singular(spec)}
          </button>
        )}
      </header>
      {editing !== undefined && (
        <ResourceForm
          key={editing ? String(editing[spec.idField]) : "new"}
          spec={spec}
          entry={editing}
          lists={lists.data ?? {}}
          onSaved={saved}
          onCancel={() => setEditing(undefined)}
        />
      )}
      <ErrorBanner error={entries.error ?? deleteError} />
      {entries.data && rows.length === 0 ? (
        <EmptyState title={`No ${spec.title.toLowerCase()} yet`} />
      ) : (
        <table className="table">
          <thead>
            <tr>
              {spec.columns.map((c) => (
                <th key={c.field}>{c.label}</th>
              ))}
              {canEdit && <th aria-label="Actions" />}
            </tr>
          </thead>
          <tbody>
            {rows.map((entry) => (
              <tr key={String(entry[spec.idField])}>
                {spec.columns.map((c) => (
                  <td key={c.field}>{cell(entry[c.field])}</td>
                ))}
                {canEdit && (
                  <td className="row-actions">
                    <button type="button" className="button ghost" onClick={() => setEditing(entry)}>
                      Edit
                    </button>
                    <button type="button" className="button ghost danger" onClick={() => remove(entry)}>
                      Delete
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
