import { describe, expect, it } from "vitest";

import { toBody, toFormValues } from "./formValues";
import { RESOURCES } from "./specs";

const nodes = RESOURCES.find((r) => r.key === "nodes")!;
const slos = RESOURCES.find((r) => r.key === "slos")!;

describe("inventory form values", () => {
  it("round-trips an entry through the form", () => {
    const entry = {
      name: "n1", site: "s", accelerator: "h100", gpus: 2, usd_per_hour: 2.5,
      models: ["m1", "m2"], role: "mixed", labels: { rack: "a1" }, exporter_urls: ["http://x/metrics"],
      address: "10.0.0.7:8000",
    };
    const { body, errors } = toBody(nodes.fields, toFormValues(nodes.fields, entry));
    expect(errors).toEqual({});
    expect(body).toEqual(entry);
  });

  it("leaves unset selects out and sends cleared optional numbers as null", () => {
    const values = toFormValues(slos.fields, null);
    values.name = "gold";
    values.ttft_p95_ms = "500";
    const { body } = toBody(slos.fields, values);
    expect(body).toMatchObject({ name: "gold", ttft_p95_ms: 500, max_usd_per_1k: null });
    expect(body).not.toHaveProperty("e2e_p95_ms");
    const site = toBody(nodes.fields, toFormValues(nodes.fields, null)).body;
    expect(site).not.toHaveProperty("site");
  });

  it("reports what the browser can tell is wrong", () => {
    const values = toFormValues(nodes.fields, null);
    values.gpus = "two";
    values.labels = "{not json";
    expect(toBody(nodes.fields, values).errors).toEqual({
      gpus: ["Enter a number."],
      labels: ["Not valid JSON."],
    });
  });
});
