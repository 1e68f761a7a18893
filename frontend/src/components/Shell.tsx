import { NavLink, Outlet, useSearchParams } from "react-router";

import { csrfToken } from "../api/client";
import { useMe } from "../auth/session";
import { can, type Capability } from "../auth/roles";
import { RANGE_PARAM } from "../lib/timeRange";
import { ActivityFeed } from "./ActivityFeed";
import { BreachCount } from "./BreachCount";
import { ConnectionIndicator } from "./ConnectionIndicator";
import { TimeRangePicker } from "./TimeRangePicker";
import { useTheme } from "./theme";

export const NAVIGATION: { to: string; label: string; end?: boolean; needs?: Capability }[] = [
  { to: "/", label: "Fleet", end: true },
  { to: "/series", label: "Time series" },
  { to: "/decisions", label: "Live decisions", end: true },
  { to: "/decisions/search", label: "Find decisions" },
  { to: "/slos", label: "SLOs & breaches" },
  { to: "/policies", label: "Policies" },
  { to: "/training", label: "Training runs" },
  { to: "/twin", label: "Twin" },
  { to: "/inventory", label: "Inventory" },
  { to: "/keys", label: "API keys", needs: "manage-keys" },
];

/** Main navigation; links keep the time range, so every page shows the same window. */
function Navigation() {
  const [params] = useSearchParams();
  const me = useMe();
  const range = params.get(RANGE_PARAM);
  const search = range ? `?${RANGE_PARAM}=${encodeURIComponent(range)}` : "";
  return (
    <nav aria-label="Main">
      {NAVIGATION.filter((item) => !item.needs || can(me, item.needs)).map((item) => (
        <NavLink key={item.to} to={{ pathname: item.to, search }} end={item.end}>
          {item.label}
        </NavLink>
      ))}
    </nav>
  );
}

function LogoutButton() {
  // Django's LogoutView takes a POST with the CSRF token, then follows `next`.
  return (
    <form method="post" action="/accounts/logout/" className="logout">
      <input type="hidden" name="csrfmiddlewaretoken" value={csrfToken(document.cookie) ?? ""} />
      <input type="hidden" name="next" value="/accounts/login/" />
      <button type="submit" className="button ghost">
        Sign out
      </button>
    </form>
  );
}

export function Shell() {
  const me = useMe();
  const [theme, cycleTheme] = useTheme();
  return (
    <div className="shell">
      <header className="topbar">
        <span className="brand">Locus</span>
        <Navigation />
        <div className="topbar-end">
          {/* The two live pills change width as they load and update; they sit left of the
              time range so, in this right-aligned bar, they never move it under a click. */}
          <BreachCount />
          <ConnectionIndicator />
          <TimeRangePicker />
          <button
            type="button"
            className="button ghost"
            onClick={cycleTheme}
            title="Colour scheme: system, light or dark"
          >
            Theme: {theme}
          </button>
          <span className="user" data-testid="user">
            {me.username} <span className="muted">({me.role ?? "no role"})</span>
          </span>
          <LogoutButton />
        </div>
      </header>
      <div className="body">
        <main>
          <Outlet />
        </main>
        <ActivityFeed />
      </div>
    </div>
  );
}
