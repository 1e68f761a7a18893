import { useEffect, useState } from "react";

import { getOverview, listBreaches } from "../api/ops";
import type { Breach } from "../api/types";
import { useLiveEvent } from "../live/context";
import { applyBreachEvent } from "../slos/breaches";
import { useAsync } from "./useAsync";

export const OVERVIEW_REFRESH_MS = 10_000;
const OPEN_BREACH_LIMIT = 500;

/** GET /overview, reloaded every ~10 s. */
export function useOverview(windowS = 900) {
  const overview = useAsync(() => getOverview(windowS), [windowS]);
  const reload = overview.reload;
  useEffect(() => {
    const timer = setInterval(reload, OVERVIEW_REFRESH_MS);
    return () => clearInterval(timer);
  }, [reload]);
  return overview;
}

/** Open breaches: loaded once, then kept current by `breach` events. `onEvent` hears every
 *  breach event (e.g. to reload a history table). */
export function useOpenBreaches(onEvent?: () => void) {
  const [open, setOpen] = useState<Breach[]>();
  const [truncated, setTruncated] = useState(false);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    listBreaches({ status: "open", limit: OPEN_BREACH_LIMIT })
      .then((page) => {
        setOpen(page.results);
        setTruncated(page.count > page.results.length);
      })
      .catch(setError);
  }, []);
  useLiveEvent("breach", (event) => {
    setOpen((previous) => applyBreachEvent(previous ?? [], event));
    onEvent?.();
  });
  return { open, truncated, error };
}
