import { useEffect, useState } from "react";

import { latestTelemetry } from "../api/nodes";
import { getOverview, listBreaches } from "../api/ops";
import type { Breach } from "../api/types";
import { useConnectionState, useLiveEvent } from "../live/context";
import { applyBreachEvent } from "../slos/breaches";
import { useAsync } from "./useAsync";
import { useInterval } from "./useInterval";

export const OVERVIEW_REFRESH_MS = 10_000;
const OPEN_BREACH_LIMIT = 500;

/** GET /overview, reloaded every ~10 s. */
export function useOverview(windowS = 900) {
  const overview = useAsync(() => getOverview(windowS), [windowS]);
  useInterval(overview.reload, OVERVIEW_REFRESH_MS);
  return overview;
}

/** How often open breaches are reloaded although events keep them current: breaches opened or
 *  resolved by a Celery worker reach the browser as events only through a shared channel
 *  layer (Redis), not on the embedded defaults, and events are lost while disconnected. */
export const OPEN_BREACH_REFRESH_MS = 15_000;

/** Open breaches: loaded, kept current by `breach` events, and reloaded every
 *  OPEN_BREACH_REFRESH_MS and whenever the live stream (re)connects. `onEvent` hears every
 *  breach event (e.g. to reload a history table). */
export function useOpenBreaches(onEvent?: () => void) {
  const [open, setOpen] = useState<Breach[]>();
  const [truncated, setTruncated] = useState(false);
  const [error, setError] = useState<unknown>();
  const [generation, setGeneration] = useState(0);
  const connection = useConnectionState();
  useEffect(() => {
    let current = true;
    listBreaches({ status: "open", limit: OPEN_BREACH_LIMIT })
      .then((page) => {
        if (!current) return;
        setOpen(page.results);
        setTruncated(page.count > page.results.length);
        setError(undefined);
      })
      .catch((e: unknown) => current && setError(e));
    return () => {
      current = false;
    };
  }, [generation, connection === "connected"]);
  useInterval(() => setGeneration((g) => g + 1), OPEN_BREACH_REFRESH_MS);
  useLiveEvent("breach", (event) => {
    // Before the first load an event has nothing to apply to (and an empty list would read as
    // "no open breaches"); the load that is under way will include it.
    setOpen((previous) => (previous === undefined ? previous : applyBreachEvent(previous, event)));
    onEvent?.();
  });
  return { open, truncated, error };
}

export const TELEMETRY_REFRESH_MS = 15_000;

/** Every node's latest telemetry with its age, reloaded every TELEMETRY_REFRESH_MS. */
export function useLatestTelemetry() {
  const telemetry = useAsync(latestTelemetry, []);
  useInterval(telemetry.reload, TELEMETRY_REFRESH_MS);
  return telemetry;
}
