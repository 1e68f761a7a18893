import { beforeEach, describe, expect, it } from "vitest";

import {
  backoffDelay,
  liveUrl,
  LiveStream,
  UNAUTHENTICATED_CLOSE,
  type ConnectionState,
  type LiveEvent,
  type SocketLike,
} from "./stream";

class FakeSocket implements SocketLike {
  onopen: SocketLike["onopen"] = null;
  onmessage: SocketLike["onmessage"] = null;
  onclose: SocketLike["onclose"] = null;
  onerror: SocketLike["onerror"] = null;
  closed = false;

  constructor(readonly url: string) {}

  open() {
    this.onopen?.(new Event("open"));
  }

  receive(data: unknown) {
    this.onmessage?.({ data: typeof data === "string" ? data : JSON.stringify(data) } as MessageEvent);
  }

  drop(code = 1006) {
    this.onerror?.(new Event("error"));
    this.onclose?.({ code } as CloseEvent);
  }

  close() {
    this.closed = true;
  }
}

/** Timers the test fires by hand, recording each delay asked for. */
class FakeTimers {
  pending: { callback: () => void; ms: number; id: number }[] = [];
  delays: number[] = [];
  private next = 0;

  set = (callback: () => void, ms: number) => {
    const id = ++this.next;
    this.pending.push({ callback, ms, id });
    this.delays.push(ms);
    return id;
  };

  clear = (id: unknown) => {
    this.pending = this.pending.filter((t) => t.id !== id);
  };

  fire() {
    const timer = this.pending.shift();
    if (!timer) throw new Error("no timer pending");
    timer.callback();
  }
}

describe("backoffDelay", () => {
  it("doubles from the base, caps at the maximum, and jitters by ±25%", () => {
    const mid = () => 0.5;
    expect([0, 1, 2, 3, 10].map((n) => backoffDelay(n, 500, 4000, mid))).toEqual([
      500, 1000, 2000, 4000, 4000,
    ]);
    expect(backoffDelay(2, 500, 4000, () => 0)).toBe(1500);
    expect(backoffDelay(2, 500, 4000, () => 1)).toBe(2500);
  });
});

describe("liveUrl", () => {
  it("uses ws on http and wss on https, same host", () => {
    expect(liveUrl({ protocol: "http:", host: "localhost:8000" })).toBe("ws://localhost:8000/ws/live/");
    expect(liveUrl({ protocol: "https:", host: "locus.example" })).toBe("wss://locus.example/ws/live/");
  });
});

describe("LiveStream", () => {
  let sockets: FakeSocket[];
  let timers: FakeTimers;
  let states: ConnectionState[];
  let stream: LiveStream;

  beforeEach(() => {
    sockets = [];
    timers = new FakeTimers();
    states = [];
    stream = new LiveStream({
      url: "ws://h/ws/live/",
      createSocket: (url) => {
        const socket = new FakeSocket(url);
        sockets.push(socket);
        return socket;
      },
      setTimer: timers.set,
      clearTimer: timers.clear,
      random: () => 0.5,
      baseDelayMs: 100,
      maxDelayMs: 1000,
      offlineAfter: 3,
    });
    stream.onStateChange((s) => states.push(s));
  });

  const last = () => sockets[sockets.length - 1]!;

  it("connects once and reports connected", () => {
    stream.start();
    stream.start();
    expect(sockets).toHaveLength(1);
    expect(last().url).toBe("ws://h/ws/live/");
    last().open();
    expect(states).toEqual(["connecting", "connected"]);
  });

  it("reconnects with growing delays, goes offline after repeated failures, keeps trying", () => {
    stream.start();
    last().drop();
    expect(stream.state).toBe("reconnecting");
    timers.fire();
    last().drop();
    timers.fire();
    last().drop();
    expect(stream.state).toBe("offline");
    timers.fire();
    last().drop();
    expect(timers.delays).toEqual([100, 200, 400, 800]);
    expect(sockets).toHaveLength(4);
  });

  it("resets the backoff after a successful connection", () => {
    stream.start();
    last().drop();
    timers.fire();
    last().drop();
    timers.fire();
    last().open();
    expect(stream.state).toBe("connected");
    last().drop();
    expect(timers.delays).toEqual([100, 200, 100]);
  });

  it("stops retrying when the server refuses the session", () => {
    stream.start();
    last().drop(UNAUTHENTICATED_CLOSE);
    expect(stream.state).toBe("offline");
    expect(timers.pending).toHaveLength(0);
  });

  it("stop() closes the socket, cancels a pending retry and ignores late events", () => {
    stream.start();
    last().drop();
    expect(timers.pending).toHaveLength(1);
    stream.stop();
    expect(timers.pending).toHaveLength(0);
    expect(stream.state).toBe("offline");

    stream.start();
    const socket = last();
    stream.stop();
    expect(socket.closed).toBe(true);
    socket.drop();
    expect(timers.pending).toHaveLength(0);
  });

  it("dispatches events by type and to wildcard subscribers; unsubscribing stops delivery", () => {
    const nodes: LiveEvent[] = [];
    const all: string[] = [];
    const unsubscribe = stream.subscribe("node.state", (e) => nodes.push(e));
    stream.subscribe("*", (e) => all.push(e.type));
    stream.start();
    last().open();
    last().receive({ type: "node.state", node: "n1", state: "draining" });
    last().receive({ type: "breach", id: 1 });
    last().receive("not json");
    last().receive({ no: "type" });
    unsubscribe();
    last().receive({ type: "node.state", node: "n2", state: "active" });
    expect(nodes).toEqual([{ type: "node.state", node: "n1", state: "draining" }]);
    expect(all).toEqual(["node.state", "breach", "node.state"]);
  });
});
