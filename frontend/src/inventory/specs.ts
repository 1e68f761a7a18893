// What the inventory editor shows and edits for each resource. Field names are the API's
// (see the OpenAPI schema), so the API's field errors land under the right inputs.

/** Where a select's choices come from: fixed values or another resource's names. */
export type Choices = readonly string[] | { resource: "sites" | "slos" | "accelerators" | "models" };

export type FieldKind =
  | { kind: "text" }
  | { kind: "number"; nullable?: boolean }
  | { kind: "select"; choices: Choices }
  | { kind: "multiselect"; choices: Choices }
  | { kind: "json" }
  | { kind: "lines" };

export type FieldSpec = FieldKind & { name: string; label: string; help?: string };

export interface ResourceSpec {
  key: string;
  title: string;
  path: string;
  /** The field that names an entry in its URL. */
  idField: "name" | "id";
  columns: { field: string; label: string }[];
  fields: FieldSpec[];
}

const TIERS = ["device", "edge", "regional", "cloud"] as const;
const NODE_ROLES = ["mixed", "prefill", "decode"] as const;

export const RESOURCES: ResourceSpec[] = [
  {
    key: "sites",
    title: "Sites",
    path: "/api/v1/sites",
    idField: "name",
    columns: [
      { field: "name", label: "Name" },
      { field: "tier", label: "Tier" },
      { field: "region", label: "Region" },
      { field: "jurisdiction", label: "Jurisdiction" },
    ],
    fields: [
      { name: "name", label: "Name", kind: "text" },
      { name: "tier", label: "Tier", kind: "select", choices: TIERS },
      { name: "region", label: "Region", kind: "text" },
      { name: "jurisdiction", label: "Jurisdiction", kind: "text", help: "Legal area, e.g. EU." },
    ],
  },
  {
    key: "nodes",
    title: "Nodes",
    path: "/api/v1/nodes",
    idField: "name",
    columns: [
      { field: "name", label: "Name" },
      { field: "site", label: "Site" },
      { field: "accelerator", label: "Accelerator" },
      { field: "gpus", label: "GPUs" },
      { field: "models", label: "Models" },
      { field: "usd_per_hour", label: "$/h" },
      { field: "state", label: "State" },
    ],
    fields: [
      { name: "name", label: "Name", kind: "text" },
      { name: "site", label: "Site", kind: "select", choices: { resource: "sites" } },
      {
        name: "accelerator",
        label: "Accelerator",
        kind: "select",
        choices: { resource: "accelerators" },
      },
      { name: "gpus", label: "GPUs", kind: "number" },
      { name: "usd_per_hour", label: "Cost ($/hour)", kind: "number" },
      { name: "models", label: "Models", kind: "multiselect", choices: { resource: "models" } },
      { name: "role", label: "Role", kind: "select", choices: NODE_ROLES },
      { name: "labels", label: "Labels", kind: "json", help: 'A JSON object, e.g. {"rack": "a1"}.' },
      { name: "exporter_urls", label: "Exporter URLs", kind: "lines", help: "One URL a line." },
      {
        name: "address",
        label: "Gateway endpoint",
        kind: "text",
        help: "ip:port an Envoy gateway routes to (blank: not routable by the picker).",
      },
    ],
  },
  {
    key: "links",
    title: "Links",
    path: "/api/v1/links",
    idField: "id",
    columns: [
      { field: "a", label: "Site A" },
      { field: "b", label: "Site B" },
      { field: "rtt_ms", label: "RTT (ms)" },
      { field: "bandwidth_gbps", label: "Gbit/s" },
      { field: "egress_usd_per_gb", label: "Egress $/GB" },
    ],
    fields: [
      { name: "a", label: "Site A", kind: "select", choices: { resource: "sites" } },
      { name: "b", label: "Site B", kind: "select", choices: { resource: "sites" } },
      { name: "rtt_ms", label: "Round trip (ms)", kind: "number" },
      { name: "bandwidth_gbps", label: "Bandwidth (Gbit/s)", kind: "number" },
      { name: "egress_usd_per_gb", label: "Egress ($/GB)", kind: "number" },
    ],
  },
  {
    key: "slos",
    title: "SLOs",
    path: "/api/v1/slos",
    idField: "name",
    columns: [
      { field: "name", label: "Name" },
      { field: "ttft_p95_ms", label: "TTFT p95 (ms)" },
      { field: "e2e_p95_ms", label: "E2E p95 (ms)" },
      { field: "residency", label: "Residency" },
      { field: "max_usd_per_1k", label: "Max $/1k" },
      { field: "max_error_rate", label: "Max error rate" },
    ],
    fields: [
      { name: "name", label: "Name", kind: "text" },
      { name: "ttft_p95_ms", label: "TTFT p95 (ms)", kind: "number" },
      { name: "e2e_p95_ms", label: "End-to-end p95 (ms)", kind: "number" },
      { name: "residency", label: "Residency", kind: "text", help: "Jurisdiction, or empty." },
      { name: "max_usd_per_1k", label: "Max $ per 1k requests", kind: "number", nullable: true },
      { name: "max_error_rate", label: "Max error rate (0–1)", kind: "number", nullable: true },
    ],
  },
  {
    key: "sources",
    title: "Sources",
    path: "/api/v1/sources",
    idField: "name",
    columns: [
      { field: "name", label: "Name" },
      { field: "site", label: "Site" },
      { field: "share", label: "Share" },
      { field: "slo", label: "SLO" },
    ],
    fields: [
      { name: "name", label: "Name", kind: "text" },
      { name: "site", label: "Site", kind: "select", choices: { resource: "sites" } },
      { name: "share", label: "Share of traffic", kind: "number" },
      { name: "slo", label: "SLO", kind: "select", choices: { resource: "slos" } },
    ],
  },
];

/** How an entry is named to a person: its name, or a link's two ends. */
export function entryLabel(spec: ResourceSpec, entry: Record<string, unknown>): string {
  return spec.idField === "name" ? String(entry.name) : `${String(entry.a)} ↔ ${String(entry.b)}`;
}

export function singular(spec: ResourceSpec): string {
  return spec.key === "slos" ? "SLO" : spec.title.slice(0, -1).toLowerCase();
}
