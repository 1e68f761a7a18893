import { useEffect, useRef } from "react";

/** Calls `callback` every `ms` while `enabled` (the latest callback, without restarting the
 *  timer when it changes identity). */
export function useInterval(callback: () => void, ms: number, enabled = true): void {
  const latest = useRef(callback);
  useEffect(() => {
    latest.current = callback;
  });
  useEffect(() => {
    if (!enabled) return;
    const timer = setInterval(() => latest.current(), ms);
    return () => clearInterval(timer);
  }, [ms, enabled]);
}
