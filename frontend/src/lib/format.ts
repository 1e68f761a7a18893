// Number and time formats shared by the pages.

export function percent(value: number | null | undefined, digits = 1): string {
  return value == null ? "—" : `${(value * 100).toFixed(digits)}%`;
}

/** Milliseconds as "850 ms", "12.3 s" or "5.1 min". */
export function duration(ms: number | null | undefined): string {
  if (ms == null) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

export function usd(value: number | null | undefined, digits = 3): string {
  return value == null ? "—" : `$${value.toFixed(digits)}`;
}

export function rate(perSecond: number): string {
  if (perSecond >= 100) return perSecond.toFixed(0);
  if (perSecond >= 10) return perSecond.toFixed(1);
  return perSecond.toFixed(2);
}

// One time format everywhere, with its zone: "Nov 24 15:06:36 UTC". UTC because an SRE compares
// these with logs, alerts and other people's screens, which a browser-local zone would not match.
export const TIME_ZONE = "UTC";
const FORMAT = new Intl.DateTimeFormat("en-US", {
  timeZone: TIME_ZONE,
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  hourCycle: "h23",
});

/** A time as "Nov 24 15:06:36 UTC" (from an ISO string, epoch milliseconds or a Date). */
export function timestamp(value: string | number | Date | null | undefined): string {
  if (value == null || value === "") return "—";
  const d = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(d.getTime())) return "—";
  const parts = Object.fromEntries(FORMAT.formatToParts(d).map((p) => [p.type, p.value]));
  return `${parts.month} ${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${TIME_ZONE}`;
}
