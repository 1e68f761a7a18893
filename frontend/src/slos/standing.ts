// How the fleet overview's SLO tiles judge an SLO: the way its breaches are judged
// (telemetry/slo_rules.py), so a red tile always has an open breach behind it. The attainment
// is held to the SLO's own objective (95% for p95 targets), and the burn rates are those the
// breach evaluator reads (the overview's `burn_rates`, telemetry/slo_status.py).

import type { BurnRate, SloAttainment } from "../api/types";
import { percent } from "../lib/format";
import { formatWindows, METRIC_LABELS } from "./breaches";

export type Tone = "ok" | "warn" | "bad";

export interface SloStanding {
  /** undefined for an SLO no longer defined (nothing to judge it by). */
  tone: Tone | undefined;
  /** One line in words: what the tile's colour means. */
  sub: string;
  /** The tooltip: the windows and every rule's burn rates. */
  title: string;
}

const burn = (value: number | null | undefined) => (value == null ? "—" : `${value.toFixed(1)}×`);
const longWindow = (rule: BurnRate) => formatWindows(rule.long_window_s, rule.short_window_s).split(" / ")[0];

/** bad only with an open page- or ticket-level breach of the SLO; warn ("burning budget") when
 *  the window's attainment is below the objective, or a rule already holds (a breach opens
 *  once it has held for the rule's hold time), with no breach open; ok otherwise. */
export function sloTone(a: SloAttainment): Tone | undefined {
  if (a.open_breach) return "bad";
  if (a.objective == null) return undefined;
  if (a.attainment < a.objective || a.burn_rates.some((r) => r.holds)) return "warn";
  return "ok";
}

/** The rule nearest to firing: the highest long-window burn rate for its factor. */
function nearest(rates: BurnRate[]): BurnRate | undefined {
  const measured = rates.filter((r) => r.long_burn_rate != null);
  const ratio = (r: BurnRate) => (r.long_burn_rate ?? 0) / r.factor;
  return measured.sort((x, y) => ratio(y) - ratio(x) || x.long_window_s - y.long_window_s)[0];
}

function sub(a: SloAttainment, tone: Tone | undefined): string {
  if (tone === undefined) return `${a.met} of ${a.outcomes} met; SLO no longer defined`;
  const objective = percent(a.objective, 0);
  if (tone === "ok") return `${a.met} of ${a.outcomes} met, objective ${objective}`;
  if (tone === "bad") {
    const metric = a.open_breach_metric && a.open_breach_metric !== "within_targets"
      ? ` (${(METRIC_LABELS[a.open_breach_metric] ?? a.open_breach_metric).toLowerCase()})`
      : "";
    return `${a.open_breach} breach open${metric}`;
  }
  const holding = a.burn_rates.find((r) => r.holds);
  if (holding) return `${burn(holding.long_burn_rate)} burn over ${longWindow(holding)}, ${holding.severity} rule firing`;
  const rule = nearest(a.burn_rates);
  if (!rule) return `below ${objective} objective, burning budget`;
  return `${burn(rule.long_burn_rate)} burn over ${longWindow(rule)}, ${rule.severity} at ${rule.factor}×`;
}

function title(a: SloAttainment, windowS: number): string {
  const minutes = Math.round(windowS / 60);
  const head = `Attainment over the last ${minutes} min: ${percent(a.attainment)} of ${a.outcomes} outcomes`
    + (a.objective == null ? "." : ` (objective ${percent(a.objective, 0)}).`);
  const rules = a.burn_rates.map((r) => {
    const [long, short] = formatWindows(r.long_window_s, r.short_window_s).split(" / ");
    return `${r.severity} ${r.factor}× over ${long} and ${short}: ${burn(r.long_burn_rate)} / ${burn(r.short_burn_rate)}${r.holds ? " (holds)" : ""}`;
  });
  const breach = a.open_breach ? `Open ${a.open_breach} breach on ${METRIC_LABELS[a.open_breach_metric ?? ""] ?? a.open_breach_metric}.` : "No breach open.";
  return [head, rules.length ? `Budget burn now (within targets), long / short window: ${rules.join("; ")}.` : "", breach]
    .filter(Boolean)
    .join(" ");
}

/** An SLO tile's colour, line and tooltip; `windowS` is the overview's attainment window. */
export function sloStanding(a: SloAttainment, windowS: number): SloStanding {
  const tone = sloTone(a);
  return { tone, sub: sub(a, tone), title: title(a, windowS) };
}
