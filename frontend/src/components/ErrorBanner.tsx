import { ApiError, flattenMessages } from "../api/client";

/** An error's message, and for API errors each field error beneath it. */
export function ErrorBanner({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  const details = error instanceof ApiError ? flattenMessages(error.errors) : [];
  return (
    <div className="error-banner" role="alert">
      {message}
      {details.length > 0 && (
        <ul>
          {details.map((detail) => (
            <li key={detail}>{detail}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
