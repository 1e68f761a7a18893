// API keys (admins only): list, issue (the secret is in the answer once) and revoke.
import { api } from "./client";
import type { ApiKey, IssuedApiKey, Page } from "./types";

export const listApiKeys = () =>
  api.request<Page<ApiKey>>("/api/v1/api-keys", { query: { limit: 1000, ordering: "name" } });

export const createApiKey = (body: { name: string; role: string }) =>
  api.request<IssuedApiKey>("/api/v1/api-keys", { method: "POST", body });

export const revokeApiKey = (id: number) =>
  api.request<ApiKey>(`/api/v1/api-keys/${id}/revoke`, { method: "POST" });
