import { describe, expect, it } from "vitest";

import {
  aroundSearch,
  EMPTY_SEARCH,
  PAGE_SIZE,
  pageLabel,
  searchFromUrl,
  searchQuery,
  searchToUrl,
  toInstant,
} from "./search";

describe("the decision search", () => {
  it("round-trips through the URL, keeping only the fields set", () => {
    const search = { ...EMPTY_SEARCH, node: "fra-h100-1", from: "2026-03-01T12:00:00.000Z", page: 2 };
    const params = searchToUrl(search);
    expect(params.toString()).toBe("node=fra-h100-1&from=2026-03-01T12%3A00%3A00.000Z&page=2");
    expect(searchFromUrl(params)).toEqual(search);
  });

  it("reads a bad page as the first", () => {
    expect(searchFromUrl(new URLSearchParams("page=-3")).page).toBe(0);
    expect(searchFromUrl(new URLSearchParams("page=x")).page).toBe(0);
  });

  it("asks the API for one page of the fields set, times in UTC", () => {
    const { query, problems } = searchQuery({
      ...EMPTY_SEARCH,
      node: "fra-h100-1",
      policy: "ppo@v2",
      from: "2026-03-01T12:00:00Z",
      to: "2026-03-01T13:00:00Z",
      page: 3,
    });
    expect(problems).toEqual({});
    expect(query).toEqual({
      limit: PAGE_SIZE,
      offset: 3 * PAGE_SIZE,
      node: "fra-h100-1",
      policy: "ppo@v2",
      from: "2026-03-01T12:00:00.000Z",
      to: "2026-03-01T13:00:00.000Z",
    });
  });

  it("says what is wrong before asking", () => {
    const { problems } = searchQuery({
      ...EMPTY_SEARCH,
      from: "2026-03-01T13:00:00Z",
      to: "2026-03-01T12:00:00Z",
      policy: "a@b@c",
    });
    expect(problems.from).toMatch(/before/);
    expect(problems.policy).toMatch(/NAME@VERSION/);
    expect(searchQuery({ ...EMPTY_SEARCH, to: "tomorrow" }).problems.to).toMatch(/date/);
  });

  it("reads a datetime-local value as the browser's local time", () => {
    const local = "2026-03-01T12:00";
    expect(toInstant(local)).toBe(new Date(2026, 2, 1, 12, 0).toISOString());
    expect(toInstant("")).toBeUndefined();
  });

  it("labels a page of results", () => {
    expect(pageLabel(1, 50, 1234)).toBe("51–100 of 1,234");
    expect(pageLabel(0, 0, 0)).toBe("No decisions match.");
  });

  it("links a node's decisions around a moment", () => {
    const at = Date.parse("2026-03-01T12:00:00Z");
    expect(aroundSearch("muc-l4-1", at, 10)).toMatchObject({
      node: "muc-l4-1",
      from: "2026-03-01T11:50:00.000Z",
      to: "2026-03-01T12:10:00.000Z",
    });
  });
});
