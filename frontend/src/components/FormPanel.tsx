import { useState, type FormEvent, type ReactNode } from "react";

import { ErrorBanner } from "./ErrorBanner";

/** Submit state for a form whose action calls the API: busy while it runs, the error if it
 * failed (shown by FormPanel), `onDone` with the result if it succeeded. */
export function useSubmit<T>(action: () => Promise<T>, onDone: (result: T) => void) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      onDone(await action());
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return { submit, busy, error };
}

/** A titled form panel: its fields in a grid, a primary submit button with optional extras
 * beside it, and the API's error (field errors included) underneath. */
export function FormPanel({
  title,
  submitLabel,
  state,
  extra,
  children,
}: {
  title: string;
  submitLabel: string;
  state: ReturnType<typeof useSubmit>;
  extra?: ReactNode;
  children: ReactNode;
}) {
  return (
    <form className="panel" onSubmit={state.submit} aria-label={title}>
      <h2>{title}</h2>
      <div className="form-grid compact">{children}</div>
      <div className="button-row">
        <button type="submit" className="button primary" disabled={state.busy}>
          {submitLabel}
        </button>
        {extra}
      </div>
      <ErrorBanner error={state.error} />
    </form>
  );
}
