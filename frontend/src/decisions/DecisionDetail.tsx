import { useEffect, useState, type ReactNode } from "react";
import { Link } from "react-router";

import { ApiError } from "../api/client";
import { getDecision } from "../api/ops";
import type { DecisionRecord } from "../api/types";
import { ErrorBanner } from "../components/ErrorBanner";
import { DecisionRecordView } from "./RecordView";

// Records are written in batches off the request thread (every ~0.2 s), so a decision seen on
// the stream may not be in the log yet: retry a 404 a few times before giving up.
const RETRIES = 6;
const RETRY_MS = 500;

/** A decision record with its receipt: a drawer beside the live feed (with `onClose`) or the
 *  body of its own page, /decisions/<id>. */
export function DecisionDetail({ id, onClose }: { id: string; onClose?: () => void }) {
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
  else body = <DecisionRecordView record={record} />;

  return (
    <section className="panel drawer" data-testid="decision-detail" aria-label="Decision record">
      <header className="panel-header">
        <h2>
          Decision <code className="small">{id}</code>
        </h2>
        {onClose && (
          <span className="toolbar">
            <Link className="button ghost" to={`/decisions/${encodeURIComponent(id)}`} data-testid="decision-link">
              Link
            </Link>
            <button type="button" className="button ghost" onClick={onClose}>
              Close
            </button>
          </span>
        )}
      </header>
      {body}
    </section>
  );
}
