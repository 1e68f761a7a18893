import { useCallback } from "react";
import { useSearchParams } from "react-router";

import { parseRange, RANGE_PARAM, type TimeRange } from "../lib/timeRange";

/** The global time range from the URL, and a setter that keeps the rest of the query. */
export function useTimeRange(): [TimeRange, (key: string) => void] {
  const [params, setParams] = useSearchParams();
  const range = parseRange(params.get(RANGE_PARAM));
  const setRange = useCallback(
    (key: string) =>
      setParams((previous) => {
        const next = new URLSearchParams(previous);
        next.set(RANGE_PARAM, key);
        return next;
      }),
    [setParams],
  );
  return [range, setRange];
}
