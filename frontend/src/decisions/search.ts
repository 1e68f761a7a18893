// The decision search's state, kept in the URL (`/decisions/search?node=…&from=…`) so a
// search is a link, and turned into GET /api/v1/decisions's query (server-side, paginated,
// over every stored record).

export const SEARCH_FIELDS = ["id", "node", "model", "slo", "policy", "arm", "from", "to"] as const;
export type SearchField = (typeof SEARCH_FIELDS)[number];
export type Search = Record<SearchField, string> & { page: number };

export const PAGE_SIZE = 50;
export const EMPTY_SEARCH: Search = {
  id: "", node: "", model: "", slo: "", policy: "", arm: "", from: "", to: "", page: 0,
};

/** The search a URL's query names; unknown parameters are ignored, a bad page is the first. */
export function searchFromUrl(params: URLSearchParams): Search {
  const search: Search = { ...EMPTY_SEARCH };
  for (const field of SEARCH_FIELDS) search[field] = params.get(field)?.trim() ?? "";
  const page = Number(params.get("page"));
  search.page = Number.isInteger(page) && page > 0 ? page : 0;
  return search;
}

/** The URL query of a search: only the fields set, so links stay short. */
export function searchToUrl(search: Search): URLSearchParams {
  const params = new URLSearchParams();
  for (const field of SEARCH_FIELDS) if (search[field]) params.set(field, search[field]);
  if (search.page > 0) params.set("page", String(search.page));
  return params;
}

/** A `datetime-local` input's value (the browser's local time, no zone) as RFC 3339 UTC;
 *  an ISO string with a zone passes as is; undefined when it is not a time. */
export function toInstant(value: string): string | undefined {
  if (!value) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

/** An RFC 3339 instant as a `datetime-local` input's value, in the browser's time zone. */
export function toLocalInput(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return "";
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export interface Checked {
  query: Record<string, string | number>;
  problems: Partial<Record<SearchField, string>>;
}

/** The API query of a search, or what is wrong with it (said before asking the server,
 *  which would answer the same with a 400). */
export function searchQuery(search: Search): Checked {
  const problems: Checked["problems"] = {};
  const query: Record<string, string | number> = { limit: PAGE_SIZE, offset: search.page * PAGE_SIZE };
  for (const field of ["id", "node", "model", "slo", "policy", "arm"] as const) {
    if (search[field]) query[field] = search[field];
  }
  for (const field of ["from", "to"] as const) {
    if (!search[field]) continue;
    const instant = toInstant(search[field]);
    if (instant) query[field] = instant;
    else problems[field] = "Not a date and time.";
  }
  if (query.from && query.to && String(query.from) >= String(query.to)) {
    problems.from = "Must be before “to”.";
  }
  if (search.policy && !/^[^@\s]+(@[^@\s]+)?$/.test(search.policy)) {
    problems.policy = "A policy name, or NAME@VERSION.";
  }
  return { query, problems };
}

/** "51–100 of 1,234" for a page of results. */
export function pageLabel(page: number, shown: number, count: number): string {
  if (count === 0) return "No decisions match.";
  const first = page * PAGE_SIZE + 1;
  return `${first.toLocaleString("en")}–${(first + shown - 1).toLocaleString("en")} of ${count.toLocaleString("en")}`;
}

/** The search for one node's decisions around a time: ±`minutes` (a node page's link). */
export function aroundSearch(node: string, atMs: number, minutes = 15): Search {
  return {
    ...EMPTY_SEARCH,
    node,
    from: new Date(atMs - minutes * 60_000).toISOString(),
    to: new Date(atMs + minutes * 60_000).toISOString(),
  };
}
