import { describe, expect, it, vi } from "vitest";

import { ApiError, createClient, csrfToken } from "./client";

function jsonResponse(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json" },
  });
}

function clientWith(response: Response | Error, cookies = "csrftoken=tok%3D1; other=x") {
  const fetch = vi.fn(async () => {
    if (response instanceof Error) throw response;
    return response;
  });
  const onUnauthenticated = vi.fn();
  const client = createClient({ fetch, cookies: () => cookies, onUnauthenticated });
  return { client, fetch, onUnauthenticated };
}

describe("csrfToken", () => {
  it("reads and decodes Django's csrftoken cookie", () => {
    expect(csrfToken("a=1; csrftoken=abc%3D; b=2")).toBe("abc=");
    expect(csrfToken("a=1")).toBeUndefined();
  });
});

describe("the API client", () => {
  it("sends the CSRF token and JSON body on unsafe methods", async () => {
    const { client, fetch } = clientWith(jsonResponse(201, { id: 1 }));
    await expect(client.request("/api/v1/sites", { method: "POST", body: { name: "x" } }))
      .resolves.toEqual({ id: 1 });
    const [url, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("/api/v1/sites");
    const headers = init.headers as Record<string, string>;
    expect(headers["X-CSRFToken"]).toBe("tok=1");
    expect(headers["Content-Type"]).toBe("application/json");
    expect(init.body).toBe('{"name":"x"}');
    expect(init.credentials).toBe("same-origin");
  });

  it("does not send the CSRF token on reads, and encodes the query", async () => {
    const { client, fetch } = clientWith(jsonResponse(200, []));
    await client.request("/api/v1/nodes", { query: { limit: 10, site: undefined, q: "a b" } });
    const [url, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("/api/v1/nodes?limit=10&q=a+b");
    expect((init.headers as Record<string, string>)["X-CSRFToken"]).toBeUndefined();
  });

  it("sends text bodies as is with their content type", async () => {
    const { client, fetch } = clientWith(jsonResponse(200, { changed: true }));
    await client.request("/api/v1/topology", {
      method: "PUT",
      body: "version: 1\n",
      contentType: "application/yaml",
    });
    const [, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(init.body).toBe("version: 1\n");
    expect((init.headers as Record<string, string>)["Content-Type"]).toBe("application/yaml");
  });

  it("turns the API's error shape into an ApiError with field errors", async () => {
    const body = { message: "The request is invalid.", errors: { name: ["Required."], b: { x: ["Bad."] } } };
    const { client } = clientWith(jsonResponse(400, body));
    const error = await client
      .request("/api/v1/sites", { method: "POST", body: {} })
      .catch((e: unknown) => e);
    if (!(error instanceof ApiError)) throw new Error("expected an ApiError");
    expect(error.status).toBe(400);
    expect(error.message).toBe("The request is invalid.");
    expect(error.fieldMessages("name")).toEqual(["Required."]);
    expect(error.fieldMessages("b")).toEqual(["x: Bad."]);
    expect(error.fieldMessages("other")).toEqual([]);
  });

  it("reports a non-JSON error by its status", async () => {
    const { client } = clientWith(new Response("<html>oops</html>", { status: 502, statusText: "Bad Gateway" }));
    await expect(client.request("/api/v1/me")).rejects.toMatchObject({
      status: 502,
      message: "502 Bad Gateway",
      errors: {},
    });
  });

  it("calls onUnauthenticated on 401 and still rejects", async () => {
    const { client, onUnauthenticated } = clientWith(jsonResponse(401, { message: "Not signed in." }));
    await expect(client.request("/api/v1/me")).rejects.toMatchObject({ status: 401 });
    expect(onUnauthenticated).toHaveBeenCalledOnce();
  });

  it("does not treat 403 as a lost session", async () => {
    const { client, onUnauthenticated } = clientWith(jsonResponse(403, { message: "Your role does not allow this." }));
    await expect(client.request("/api/v1/api-keys")).rejects.toMatchObject({
      status: 403,
      message: "Your role does not allow this.",
    });
    expect(onUnauthenticated).not.toHaveBeenCalled();
  });

  it("reports a network failure as status 0", async () => {
    const { client } = clientWith(new TypeError("Failed to fetch"));
    await expect(client.request("/api/v1/me")).rejects.toMatchObject({
      status: 0,
      message: "The server cannot be reached.",
    });
  });

  it("fails a request the server does not answer in time", async () => {
    vi.useFakeTimers();
    try {
      // A fetch that hangs until its signal aborts, as a browser's does.
      const fetch = vi.fn(
        (_url: RequestInfo | URL, init?: RequestInit) =>
          new Promise<Response>((_resolve, reject) => {
            init?.signal?.addEventListener("abort", () =>
              reject(new DOMException("The operation was aborted.", "AbortError")),
            );
          }),
      );
      const client = createClient({
        fetch,
        cookies: () => "",
        onUnauthenticated: vi.fn(),
        timeoutMs: 5_000,
      });
      const answer = client.request("/api/v1/nodes");
      const checked = expect(answer).rejects.toMatchObject({
        status: 0,
        message: "The server did not answer within 5 s.",
      });
      await vi.advanceTimersByTimeAsync(5_000);
      await checked;
    } finally {
      vi.useRealTimers();
    }
  });

  it("passes the caller's own abort through as an AbortError", async () => {
    const fetch = vi.fn(
      (_url: RequestInfo | URL, init?: RequestInit) =>
        new Promise<Response>((_resolve, reject) => {
          init?.signal?.addEventListener("abort", () =>
            reject(new DOMException("The operation was aborted.", "AbortError")),
          );
        }),
    );
    const client = createClient({ fetch, cookies: () => "", onUnauthenticated: vi.fn() });
    const caller = new AbortController();
    const answer = client.request("/api/v1/nodes", { signal: caller.signal });
    caller.abort();
    await expect(answer).rejects.toMatchObject({ name: "AbortError" });
  });

  it("answers undefined for 204 No Content", async () => {
    const { client } = clientWith(new Response(null, { status: 204 }));
    await expect(client.request("/api/v1/sites/x", { method: "DELETE" })).resolves.toBeUndefined();
  });
});
