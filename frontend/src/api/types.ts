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
export type NodeState = Node["state"];
export type Tier = Site["tier"];

export interface Page<T> {
  count: number;
  next?: string | null;
  previous?: string | null;
  results: T[];
}

/** GET /api/v1/nodes/{name}/telemetry?metric=: one series per label set, points [ISO time, value]. */
export interface TelemetrySeries {
  node: string;
  metric: string;
  truncated: boolean;
  series: { labels: Record<string, string>; points: [string, number][] }[];
}

/** One node's entry in GET /api/v1/telemetry/latest (canonical units; null = never reported). */
export interface LatestTelemetry {
  updated_at: string;
  age_s: number;
  stale: boolean;
  queue_depth: number | null;
  running: number | null;
  kv_usage: number | null;
  gpu_util: number | null;
}
