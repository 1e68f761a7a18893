import { useState, type FormEvent } from "react";

import { api, ApiError, flattenMessages } from "../api/client";
import { toBody, toFormValues, type Entry, type FormValues } from "./formValues";
import { entryLabel, singular, type Choices, type FieldSpec, type ResourceSpec } from "./specs";

export type ChoiceLists = Record<string, string[]>;

function options(choices: Choices, lists: ChoiceLists): readonly string[] {
  return "resource" in choices ? (lists[choices.resource] ?? []) : choices;
}

function Input({ field, value, lists, onChange }: {
  field: FieldSpec;
  value: FormValues[string] | undefined;
  lists: ChoiceLists;
  onChange: (value: FormValues[string]) => void;
}) {
  const id = `field-${field.name}`;
  switch (field.kind) {
    case "select":
      return (
        <select id={id} name={field.name} value={String(value ?? "")} onChange={(e) => onChange(e.target.value)}>
          <option value="">—</option>
          {options(field.choices, lists).map((o) => (
            <option key={o}>{o}</option>
          ))}
        </select>
      );
    case "multiselect":
      return (
        <select
          id={id}
          name={field.name}
          multiple
          value={Array.isArray(value) ? value : []}
          onChange={(e) => onChange(Array.from(e.target.selectedOptions, (o) => o.value))}
        >
          {options(field.choices, lists).map((o) => (
            <option key={o}>{o}</option>
          ))}
        </select>
      );
    case "json":
    case "lines":
      return <textarea id={id} name={field.name} rows={3} value={String(value ?? "")} onChange={(e) => onChange(e.target.value)} />;
    default:
      return (
        <input
          id={id}
          name={field.name}
          inputMode={field.kind === "number" ? "decimal" : undefined}
          value={String(value ?? "")}
          onChange={(e) => onChange(e.target.value)}
        />
      );
  }
}

/** Create (entry === null) or edit one entry; shows the API's message and field errors. */
export function ResourceForm({ spec, entry, lists, onSaved, onCancel }: {
  spec: ResourceSpec;
  entry: Entry | null;
  lists: ChoiceLists;
  onSaved: () => void;
  onCancel: () => void;
}) {
  const [values, setValues] = useState(() => toFormValues(spec.fields, entry));
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const { body, errors } = toBody(spec.fields, values);
    if (Object.keys(errors).length) {
      setError(new ApiError(400, "Some fields need fixing.", errors));
      return;
    }
    setBusy(true);
    try {
      if (entry === null) await api.request(spec.path, { method: "POST", body });
      else {
        const id = encodeURIComponent(String(entry[spec.idField]));
        await api.request(`${spec.path}/${id}`, { method: "PATCH", body });
      }
      onSaved();
    } catch (e) {
      setError(e instanceof ApiError ? e : new ApiError(0, String(e)));
    } finally {
      setBusy(false);
    }
  }

  const known = new Set(spec.fields.map((f) => f.name));
  const otherErrors = Object.entries(error?.errors ?? {})
    .filter(([key]) => !known.has(key))
    .flatMap(([, value]) => flattenMessages(value));

  return (
    <form className="panel resource-form" onSubmit={submit} aria-label={`${entry ? "Edit" : "New"} ${singular(spec)}`}>
      <h3>{entry ? `Edit ${entryLabel(spec, entry)}` : `New ${singular(spec)}`}</h3>
      {error && (
        <div className="error-banner" role="alert">
          {error.message}
          {otherErrors.map((m) => (
            <div key={m}>{m}</div>
          ))}
        </div>
      )}
      <div className="form-grid">
        {spec.fields.map((field) => {
          const messages = error?.fieldMessages(field.name) ?? [];
          return (
            <div key={field.name} className={`field ${messages.length ? "invalid" : ""}`}>
              <label htmlFor={`field-${field.name}`}>{field.label}</label>
              <Input
                field={field}
                value={values[field.name]}
                lists={lists}
                onChange={(value) => setValues((v) => ({ ...v, [field.name]: value }))}
              />
              {field.help && <span className="muted small">{field.help}</span>}
              {messages.map((m) => (
                <span key={m} className="field-error">
                  {m}
                </span>
              ))}
            </div>
          );
        })}
      </div>
      <div className="button-row">
        <button type="submit" className="button primary" disabled={busy}>
          Save
        </button>
        <button type="button" className="button ghost" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
