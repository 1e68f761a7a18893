// Converting between API entries and the editor's form state (strings and string lists).
import type { FieldSpec } from "./specs";

export type FormValue = string | string[];
export type FormValues = Record<string, FormValue>;
export type Entry = Record<string, unknown>;

export function toFormValues(fields: FieldSpec[], entry: Entry | null): FormValues {
  const values: FormValues = {};
  for (const field of fields) {
    const value = entry?.[field.name];
    if (field.kind === "multiselect") values[field.name] = Array.isArray(value) ? value.map(String) : [];
    else if (field.kind === "json") values[field.name] = JSON.stringify(value ?? {}, null, 1);
    else if (field.kind === "lines") values[field.name] = Array.isArray(value) ? value.join("\n") : "";
    else values[field.name] = value === null || value === undefined ? "" : String(value);
  }
  return values;
}

/** The request body, or the fields the browser can already tell are wrong. */
export function toBody(
  fields: FieldSpec[],
  values: FormValues,
): { body: Entry; errors: Record<string, string[]> } {
  const body: Entry = {};
  const errors: Record<string, string[]> = {};
  for (const field of fields) {
    const raw = values[field.name] ?? "";
    const text = Array.isArray(raw) ? "" : raw.trim();
    switch (field.kind) {
      case "multiselect":
        body[field.name] = Array.isArray(raw) ? raw : [];
        break;
      case "number":
        if (text === "") {
          if (field.nullable) body[field.name] = null;
        } else if (Number.isNaN(Number(text))) {
          errors[field.name] = ["Enter a number."];
        } else {
          body[field.name] = Number(text);
        }
        break;
      case "json":
        try {
          body[field.name] = text === "" ? {} : JSON.parse(text);
        } catch {
          errors[field.name] = ["Not valid JSON."];
        }
        break;
      case "lines":
        body[field.name] = text.split("\n").map((l) => l.trim()).filter(Boolean);
        break;
      case "select":
        // Unset: leave it out, so the API says it is required (or keeps its default).
        if (text !== "") body[field.name] = text;
        break;
      default:
        body[field.name] = text;
    }
  }
  return { body, errors };
}
