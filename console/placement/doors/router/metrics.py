"""The router's own Prometheus metrics, served at its `/metrics` with the engine's
(console/placement/metrics.py: decisions, latency, fallbacks, breaker trips)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

ROUTER_SECONDS = Histogram(
    "locus_router_overhead_seconds",
    "Router time from a call's whole body to its forwarding: parsing, hashing the prompt, "
    "the decision (not the network, not the node).",
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1),
)
ROUTER_CALLS = Counter(
    "locus_router_calls_total",
    "Requests answered, by HTTP status class (`cut`: a node failed past the first byte).",
    ["status"],
)
ROUTER_RETRIES = Counter(
    "locus_router_retries_total",
    "Nodes skipped for the next fallback (unreachable, or 5xx before the first byte).",
    ["node"],
)
ROUTER_TOKENS = Counter(
    "locus_router_tokens_total",
    "Tokens of forwarded calls from the nodes' `usage`, by node and kind (prompt, completion).",
    ["node", "kind"],
)
ROUTER_DISCONNECTS = Counter(
    "locus_router_client_disconnects_total",
    "Calls whose client went away before the answer ended (the node's request cancelled).",
)
