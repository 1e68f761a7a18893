import { NavLink, Outlet } from "react-router";

import { csrfToken } from "../api/client";
import { useMe } from "../auth/session";
import { ActivityFeed } from "./ActivityFeed";
import { ConnectionIndicator } from "./ConnectionIndicator";
import { useTheme } from "./theme";

export const NAVIGATION = [
  { to: "/", label: "Fleet", end: true },
  { to: "/decisions", label: "Live decisions" },
  { to: "/slos", label: "SLOs & breaches" },
  { to: "/policies", label: "Policies" },
  { to: "/training", label: "Training runs" },
  { to: "/twin", label: "Twin" },
  { to: "/inventory", label: "Inventory" },
];

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
        <nav aria-label="Main">
          {NAVIGATION.map((item) => (
            <NavLink key={item.to} to={item.to} end={item.end}>
              {item.label}
            </NavLink>
          ))}
        </nav>
        <div className="topbar-end">
          <ConnectionIndicator />
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
