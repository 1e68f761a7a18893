import { EmptyState } from "./EmptyState";

/** The placeholder of a page whose API is not served yet. */
export function ComingSoon({ title, what }: { title: string; what: string }) {
  return (
    <div className="page">
      <header className="page-header">
        <h1>{title}</h1>
      </header>
      <EmptyState title="Coming with the decision API">{what}</EmptyState>
    </div>
  );
}
