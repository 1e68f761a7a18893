// A small fetch wrapper for the Locus API: same-origin session auth with Django's CSRF token,
// JSON in and out, and one error type carrying the API's {message, errors} body.

export type FieldErrors = Record<string, unknown>;

export class ApiError extends Error {
  readonly status: number;
  readonly errors: FieldErrors;
  /** The whole JSON error body (e.g. a 503 placement's `reasons`), when there was one. */
  readonly body: unknown;

  constructor(status: number, message: string, errors: FieldErrors = {}, body?: unknown) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.errors = errors;
    this.body = body;
  }

  /** The messages for one field (or a nested object of fields), flattened for display. */
  fieldMessages(field: string): string[] {
    return flattenMessages(this.errors[field]);
  }
}

export function flattenMessages(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(flattenMessages);
  if (typeof value === "object") {
    return Object.entries(value).flatMap(([key, inner]) =>
      flattenMessages(inner).map((message) => `${key}: ${message}`),
    );
  }
  return [String(value)];
}

export interface RequestOptions {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** A JSON-serialisable body, or a string sent as is with `contentType`. */
  body?: unknown;
  contentType?: string;
  query?: Record<string, string | number | undefined>;
  signal?: AbortSignal;
}

export interface ClientDeps {
  fetch: typeof fetch;
  /** The document's cookies, read for Django's `csrftoken`. */
  cookies: () => string;
  /** Called once the server says the session is gone (401). */
  onUnauthenticated: () => void;
  /** A request without an answer by then fails (a hung server must not leave a page on
   *  "Loading…" for ever). Default REQUEST_TIMEOUT_MS. */
  timeoutMs?: number;
}

export const REQUEST_TIMEOUT_MS = 20_000;

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export function csrfToken(cookies: string): string | undefined {
  for (const part of cookies.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === "csrftoken") return decodeURIComponent(rest.join("="));
  }
  return undefined;
}

function withQuery(path: string, query: RequestOptions["query"]): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== "") params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

async function errorFrom(response: Response): Promise<ApiError> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  if (body && typeof body === "object" && "message" in body) {
    const { message, errors } = body as { message: unknown; errors?: unknown };
    const fieldErrors = errors && typeof errors === "object" ? (errors as FieldErrors) : {};
    return new ApiError(response.status, String(message), fieldErrors, body);
  }
  const reason = response.statusText || "request failed";
  return new ApiError(response.status, `${response.status} ${reason}`);
}

export function createClient(deps: ClientDeps) {
  async function raw(path: string, options: RequestOptions = {}): Promise<Response> {
    const method = options.method ?? "GET";
    const headers: Record<string, string> = { Accept: "application/json" };
    let body: BodyInit | undefined;
    if (options.body !== undefined) {
      if (typeof options.body === "string" && options.contentType) {
        body = options.body;
        headers["Content-Type"] = options.contentType;
      } else {
        body = JSON.stringify(options.body);
        headers["Content-Type"] = "application/json";
      }
    }
    if (UNSAFE.has(method)) {
      const token = csrfToken(deps.cookies());
      if (token) headers["X-CSRFToken"] = token;
    }
    // One signal for both the caller's abort and the timeout.
    const timeoutMs = deps.timeoutMs ?? REQUEST_TIMEOUT_MS;
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const callerAborted = () => controller.abort();
    options.signal?.addEventListener("abort", callerAborted);
    if (options.signal?.aborted) controller.abort();
    let response: Response;
    try {
      response = await deps.fetch(withQuery(path, options.query), {
        method,
        headers,
        body,
        credentials: "same-origin",
        signal: controller.signal,
      });
    } catch (error) {
      if (timedOut) {
        throw new ApiError(0, `The server did not answer within ${Math.round(timeoutMs / 1000)} s.`);
      }
      if (error instanceof DOMException && error.name === "AbortError") throw error;
      throw new ApiError(0, "The server cannot be reached.");
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", callerAborted);
    }
    if (response.status === 401) deps.onUnauthenticated();
    if (!response.ok) throw await errorFrom(response);
    return response;
  }

  async function request<T>(path: string, options: RequestOptions = {}): Promise<T> {
    const response = await raw(path, options);
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  return { raw, request };
}

export type ApiClient = ReturnType<typeof createClient>;

export function loginUrl(next: string): string {
  return `/accounts/login/?next=${encodeURIComponent(next)}`;
}

export const api: ApiClient = createClient({
  fetch: (...args) => window.fetch(...args),
  cookies: () => document.cookie,
  onUnauthenticated: () => {
    window.location.assign(loginUrl(window.location.pathname + window.location.search));
  },
});
