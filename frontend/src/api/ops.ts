// Reads and writes for the operations pages: decisions, SLOs and breaches, policies, training.
import { api } from "./client";
import type {
  ExplorationProbe,
  ProbeProposal,
  Breach,
  BurnRates,
  DecisionRecord,
  FleetSeries,
  Overview,
  Page,
  PlacementAnswer,
  PlacementRequest,
  PolicyTransition,
  PolicyVersion,
  Rollout,
  ServedModel,
  Slo,
  Source,
  TrainingRun,
  CalibrationRun,
  ProposalDecision,
} from "./types";

type Query = Record<string, string | number | undefined>;

export const getOverview = (windowS = 900) =>
  api.request<Overview>("/api/v1/overview", { query: { window: windowS } });

export const listDecisions = (query: Query = {}) =>
  api.request<Page<DecisionRecord>>("/api/v1/decisions", { query });

export const getDecision = (id: string) =>
  api.request<DecisionRecord>(`/api/v1/decisions/${encodeURIComponent(id)}`);

export const explainPlacement = (body: Omit<PlacementRequest, "explain">) =>
  api.request<PlacementAnswer>("/api/v1/placements", {
    method: "POST",
    body: { ...body, explain: true },
  });

export const listBreaches = (query: Query = {}) =>
  api.request<Page<Breach>>("/api/v1/breaches", { query });

export const getBurnRates = () => api.request<BurnRates>("/api/v1/breaches/burn-rates");

export const listSlos = () => api.request<Page<Slo>>("/api/v1/slos", { query: { limit: 1000 } });

export const listPolicies = () =>
  api.request<Page<PolicyVersion>>("/api/v1/policies", { query: { limit: 200 } });

export const getRollout = () => api.request<Rollout>("/api/v1/rollout");

export const listTransitions = (query: Query = {}) =>
  api.request<Page<PolicyTransition>>("/api/v1/policy-transitions", {
    query: { limit: 50, ...query },
  });

export const registerPolicy = (body: {
  name: string;
  version: string;
  heuristic?: string;
  artifact_dir?: string;
}) => api.request<PolicyVersion>("/api/v1/policies", { method: "POST", body });

export type PolicyAction = "approve" | "shadow" | "canary" | "promote" | "rollback";

export const policyAction = (
  id: number,
  action: PolicyAction,
  body: { reason: string; canary_share?: number },
) => api.request<PolicyVersion>(`/api/v1/policies/${id}/${action}`, { method: "POST", body });

export const evaluatePolicy = (id: number, body: { loads?: number[]; seeds?: number[] } = {}) =>
  api.request<unknown>(`/api/v1/policies/${id}/evaluate`, { method: "POST", body });

export const listTrainingRuns = () =>
  api.request<Page<TrainingRun>>("/api/v1/training-runs", { query: { limit: 100 } });

export const getTrainingRun = (id: number) =>
  api.request<TrainingRun>(`/api/v1/training-runs/${id}`);

export const startTrainingRun = (body: {
  trace?: string;
  timesteps?: number;
  seed?: number;
  confirm?: boolean;
  init?: "generalist" | "imitation";
  register_below_baseline?: boolean;
}) =>
  api.request<TrainingRun>("/api/v1/training-runs", { method: "POST", body });

export const listSources = () =>
  api.request<Page<Source>>("/api/v1/sources", { query: { limit: 1000 } });

export const listModels = () =>
  api.request<Page<ServedModel>>("/api/v1/models", { query: { limit: 1000 } });

export const getBreakers = () =>
  api.request<{ states: Record<string, string> }>("/api/v1/breakers");

/** GET /api/v1/series/fleet over [from, to) (RFC 3339). */
export const getFleetSeries = (range: { from: string; to: string }) =>
  api.request<FleetSeries>("/api/v1/series/fleet", { query: range });
export const listCalibrationRuns = () =>
  api.request<Page<CalibrationRun>>("/api/v1/calibration-runs", { query: { limit: 50 } });

export const startCalibration = (body: { hours: number; min_samples?: number }) =>
  api.request<CalibrationRun>("/api/v1/calibration-runs", { method: "POST", body });

export const decideProposal = (id: number, verb: "apply" | "discard", reason: string, override = false) =>
  api.request<ProposalDecision>(`/api/v1/calibration-runs/${id}/${verb}`, {
    method: "POST",
    body: verb === "apply" && override ? { reason, override: true } : { reason },
  });

export const listProbes = () =>
  api.request<Page<ExplorationProbe>>("/api/v1/probes", { query: { limit: 20 } });

export const proposeProbe = (body: ProbeProposal) =>
  api.request<ExplorationProbe>("/api/v1/probes", { method: "POST", body });

export const stepProbe = (id: number, verb: "approve" | "start" | "abort", reason: string) =>
  api.request<ExplorationProbe>(`/api/v1/probes/${id}/${verb}`, { method: "POST", body: { reason } });
