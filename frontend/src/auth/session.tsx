import { createContext, useContext, useEffect, useState, type ReactNode } from "react";

import { api, ApiError } from "../api/client";
import type { Me } from "../api/types";
import { can, type Capability } from "./roles";

const SessionContext = createContext<Me | null>(null);

/** Loads GET /api/v1/me once; a 401 sends the browser to the login page (see api/client). */
export function SessionProvider({ children }: { children: ReactNode }) {
  const [me, setMe] = useState<Me | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    api
      .request<Me>("/api/v1/me")
      .then(setMe)
      .catch((e: unknown) => {
        if (!(e instanceof ApiError && e.status === 401)) setError(String(e));
      });
  }, []);

  if (error) return <div className="boot-message">Cannot load your session: {error}</div>;
  if (!me) return <div className="boot-message">Loading…</div>;
  return <SessionContext.Provider value={me}>{children}</SessionContext.Provider>;
}

export function useMe(): Me {
  const me = useContext(SessionContext);
  if (!me) throw new Error("useMe outside SessionProvider");
  return me;
}

export function useCan(capability: Capability): boolean {
  return can(useMe(), capability);
}
