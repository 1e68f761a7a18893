// Names for the schema's components, generated from the OpenAPI schema (`npm run gen:api`).
import type { components } from "./schema";

type Schemas = components["schemas"];

export type Me = Schemas["Me"];
export type Site = Schemas["Site"];
export type Link = Schemas["Link"];
export type Node = Schemas["Node"];
export type Slo = Schemas["Slo"];
export type Source = Schemas["Source"];
export type Accelerator = Schemas["Accelerator"];
export type ServedModel = Schemas["ServedModel"];
export type NodeState = Schemas["StateEnum"];
export type Tier = Schemas["TierEnum"];

export interface Page<T> {
  count: number;
  next?: string | null;
  previous?: string | null;
  results: T[];
}

/** GET /api/v1/nodes/{name}/telemetry: one metric's points as [ISO timestamp, value]. */
export interface TelemetrySeries {
  node: string;
  metric: string;
  points: [string, number][];
}
