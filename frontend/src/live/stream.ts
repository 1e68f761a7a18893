// One websocket to /ws/live/ for the whole app: reconnects with capped exponential backoff
// (with jitter, so a restarted server is not hit by every browser at once) and hands each
// event to the subscribers of its `type`.

export type ConnectionState = "connecting" | "connected" | "reconnecting" | "offline";

export interface LiveEvent {
  type: string;
  [field: string]: unknown;
}

/** The part of the browser's WebSocket the stream uses, so tests can hand in a fake. */
export interface SocketLike {
  onopen: ((event: Event) => void) | null;
  onmessage: ((event: MessageEvent) => void) | null;
  onclose: ((event: CloseEvent) => void) | null;
  onerror: ((event: Event) => void) | null;
  close(code?: number): void;
}

export interface StreamOptions {
  url: string;
  createSocket: (url: string) => SocketLike;
  setTimer?: (callback: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
  random?: () => number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Failed attempts in a row after which the indicator says offline (retries go on). */
  offlineAfter?: number;
}

/** The server closes with this code when the session is not signed in: retrying is futile. */
export const UNAUTHENTICATED_CLOSE = 4401;

type Handler = (event: LiveEvent) => void;
type StateListener = (state: ConnectionState) => void;

/** Delay before reconnect attempt `attempt` (0-based): base·2^attempt, capped, jittered ±25%. */
export function backoffDelay(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number,
): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** attempt);
  return Math.round(ceiling * (0.75 + random() * 0.5));
}

export function liveUrl(location: { protocol: string; host: string }): string {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}/ws/live/`;
}

export class LiveStream {
  private socket: SocketLike | null = null;
  private timer: unknown = null;
  private failures = 0;
  private running = false;
  private current: ConnectionState = "offline";
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly stateListeners = new Set<StateListener>();
  private readonly setTimer: (callback: () => void, ms: number) => unknown;
  private readonly clearTimer: (handle: unknown) => void;
  private readonly random: () => number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly offlineAfter: number;

  constructor(private readonly options: StreamOptions) {
    this.setTimer = options.setTimer ?? ((cb, ms) => setTimeout(cb, ms));
    this.clearTimer =
      options.clearTimer ?? ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
    this.random = options.random ?? Math.random;
    this.baseDelayMs = options.baseDelayMs ?? 500;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
    this.offlineAfter = options.offlineAfter ?? 5;
  }

  get state(): ConnectionState {
    return this.current;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.failures = 0;
    this.connect("connecting");
  }

  stop(): void {
    this.running = false;
    if (this.timer !== null) this.clearTimer(this.timer);
    this.timer = null;
    const socket = this.socket;
    this.socket = null;
    socket?.close();
    this.setState("offline");
  }

  /** Calls `handler` for each event of `type` ("*" for every event); returns the unsubscriber. */
  subscribe(type: string, handler: Handler): () => void {
    let set = this.handlers.get(type);
    if (!set) {
      set = new Set();
      this.handlers.set(type, set);
    }
    set.add(handler);
    return () => set.delete(handler);
  }

  onStateChange(listener: StateListener): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  private connect(state: ConnectionState): void {
    this.timer = null;
    this.setState(state);
    const socket = this.options.createSocket(this.options.url);
    this.socket = socket;
    socket.onopen = () => {
      if (this.socket !== socket) return;
      this.failures = 0;
      this.setState("connected");
    };
    socket.onmessage = (message) => {
      if (this.socket === socket) this.dispatch(message.data);
    };
    socket.onclose = (event) => {
      if (this.socket === socket) this.closed(event.code);
    };
    socket.onerror = () => {
      // A close event always follows an error; reconnecting happens there.
    };
  }

  private closed(code: number): void {
    this.socket = null;
    if (!this.running) return;
    if (code === UNAUTHENTICATED_CLOSE) {
      this.running = false;
      this.setState("offline");
      return;
    }
    const delay = backoffDelay(this.failures, this.baseDelayMs, this.maxDelayMs, this.random);
    this.failures += 1;
    const next = this.failures >= this.offlineAfter ? "offline" : "reconnecting";
    this.setState(next);
    this.timer = this.setTimer(() => this.connect(next), delay);
  }

  private dispatch(data: unknown): void {
    let event: unknown;
    try {
      event = JSON.parse(String(data));
    } catch {
      return;
    }
    if (!event || typeof event !== "object" || typeof (event as LiveEvent).type !== "string") {
      return;
    }
    const live = event as LiveEvent;
    for (const key of [live.type, "*"]) {
      for (const handler of this.handlers.get(key) ?? []) handler(live);
    }
  }

  private setState(state: ConnectionState): void {
    if (state === this.current) return;
    this.current = state;
    for (const listener of this.stateListeners) listener(state);
  }
}
