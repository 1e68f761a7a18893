import {
  createContext,
  useContext,
  useEffect,
  useRef,
  useState,
  useSyncExternalStore,
  type ReactNode,
} from "react";

import { LiveStream, liveUrl, type LiveEvent } from "./stream";

const ACTIVITY_LIMIT = 50;
// Decisions have their own page and arrive up to ~20 a second: the feed keeps to changes of
// state (nodes, breaches, breakers, policies, training) so they are not scrolled away.
const NOT_ACTIVITY = new Set(["hello", "decision", "decision.summary"]);

interface LiveContextValue {
  stream: LiveStream;
  activity: LiveEvent[];
}

const LiveContext = createContext<LiveContextValue | null>(null);

/** Opens the app's one live connection and keeps the latest events for the activity feed. */
export function LiveProvider({ children }: { children: ReactNode }) {
  const [stream] = useState(
    () =>
      new LiveStream({
        url: liveUrl(window.location),
        createSocket: (url) => new WebSocket(url),
      }),
  );
  const [activity, setActivity] = useState<LiveEvent[]>([]);

  useEffect(() => {
    const unsubscribe = stream.subscribe("*", (event) => {
      if (NOT_ACTIVITY.has(event.type)) return;
      setActivity((previous) => [event, ...previous].slice(0, ACTIVITY_LIMIT));
    });
    stream.start();
    return () => {
      unsubscribe();
      stream.stop();
    };
  }, [stream]);

  return <LiveContext.Provider value={{ stream, activity }}>{children}</LiveContext.Provider>;
}

function useLive(): LiveContextValue {
  const value = useContext(LiveContext);
  if (!value) throw new Error("live hooks need a LiveProvider");
  return value;
}

export function useConnectionState() {
  const { stream } = useLive();
  return useSyncExternalStore(
    (notify) => stream.onStateChange(notify),
    () => stream.state,
  );
}

export function useActivity(): LiveEvent[] {
  return useLive().activity;
}

/** Calls `handler` for every live event of `type` while the component is mounted. */
export function useLiveEvent(type: string, handler: (event: LiveEvent) => void): void {
  const { stream } = useLive();
  const latest = useRef(handler);
  latest.current = handler;
  useEffect(() => stream.subscribe(type, (event) => latest.current(event)), [stream, type]);
}
