import { useState } from "react";
import { Link } from "react-router";

import { getBreakers } from "../api/ops";
import { addSummary, emptyFeed, rates, summaryFromEvent } from "../decisions/feed";
import { useAsync } from "../hooks/useAsync";
import { useInterval } from "../hooks/useInterval";
import { useOpenBreaches, useOverview } from "../hooks/useOps";
import { useLiveEvent } from "../live/context";
import { percent, rate } from "../lib/format";
import { sloStanding, type Tone } from "../slos/standing";

/** The live decision rate from `decision.summary` events (the server's full totals), or null
 *  until the first summary arrives. */
function useLiveRate(): number | null {
  const [feed, setFeed] = useState(() => emptyFeed(Date.now()));
  const [now, setNow] = useState(() => Date.now());
  useInterval(() => setNow(Date.now()), 1000);
  useLiveEvent("decision.summary", (event) =>
    setFeed((f) => addSummary(f, summaryFromEvent(event, Date.now()))),
  );
  return feed.summaries.length ? rates(feed, now).decisionsPerS : null;
}

function Tile({ label, value, sub, tone, testId, to, title }: {
  label: string;
  value: string;
  sub?: string;
  tone?: Tone;
  testId?: string;
  to?: string;
  title?: string;
}) {
  const body = (
    <>
      <span className="tile-label">{label}</span>
      <span className={`tile-value ${tone ? `tone-${tone}` : ""}`} data-testid={testId}>
        {value}
      </span>
      {sub && <span className="tile-sub muted" data-testid={testId && `${testId}-sub`}>{sub}</span>}
    </>
  );
  return to ? (
    <Link className="tile" to={to} title={title}>
      {body}
    </Link>
  ) : (
    <div className="tile" title={title}>{body}</div>
  );
}

/** Fleet-wide figures above the fleet: decision rate, SLO attainment, breaches, breakers. */
export function OpsStrip() {
  const overview = useOverview();
  const liveRate = useLiveRate();
  const breaches = useOpenBreaches();
  const breakers = useAsync(getBreakers, []);
  const reloadBreakers = breakers.reload;
  useLiveEvent("breaker", reloadBreakers);
  const openBreakers = Object.values(breakers.data?.states ?? {}).filter((s) => s !== "closed").length;
  const o = overview.data;
  const open = breaches.open?.length;

  return (
    <section className="tiles" aria-label="Operations summary" data-testid="ops-strip">
      <Tile
        label={liveRate === null ? "Decisions/s (last min)" : "Decisions/s (live)"}
        value={liveRate !== null ? rate(liveRate) : o ? rate(o.decisions_per_s) : "…"}
        sub={o ? `${rate(o.decisions_per_s)}/s over the last minute` : undefined}
        testId="live-rate"
        to="/decisions"
      />
      <Tile
        label="Decisions, 15 min"
        value={o ? o.decisions_in_window.toLocaleString() : "…"}
        sub={o?.by_policy[0] ? `mostly ${o.by_policy[0].policy}` : "none yet"}
      />
      {(o?.slo_attainment ?? []).map((a) => {
        // Coloured as breaches are judged (slos/standing.ts): red only with an open breach.
        const standing = sloStanding(a, o?.window_s ?? 900);
        return (
          <Tile
            key={a.slo}
            label={`SLO ${a.slo}, ${Math.round((o?.window_s ?? 900) / 60)} min`}
            value={percent(a.attainment)}
            sub={standing.sub}
            tone={standing.tone}
            title={standing.title}
            testId={`attainment-${a.slo}`}
            to="/slos"
          />
        );
      })}
      {o && o.slo_attainment.length === 0 && (
        <Tile label="SLO attainment" value="—" sub="no outcomes reported in 15 min" to="/slos" />
      )}
      <Tile
        label="Open breaches"
        value={open === undefined ? "…" : String(open)}
        tone={open ? "bad" : "ok"}
        testId="open-breach-tile"
        to="/slos"
        sub={open ? "see SLOs & breaches" : "all windows within SLO"}
      />
      <Tile
        label="Breakers open"
        value={breakers.data ? String(openBreakers) : "…"}
        tone={openBreakers ? "warn" : undefined}
        sub="nodes kept out after failures"
      />
    </section>
  );
}
