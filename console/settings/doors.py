"""The doors other systems ask for decisions through, besides the REST API: kube-scheduler's
extender, the Envoy endpoint picker and the OpenAI-compatible router
(console.placement.doors). docs/settings.md, "The scheduler extender and the endpoint picker"
and "The OpenAI-compatible router"."""

from __future__ import annotations

from console.settings.environment import env

# -- the scheduler extender (console.placement.doors.extender) ---------------------------------
# kube-scheduler's extender protocol cannot send a bearer token: inside a cluster, protect
# /extender/ with a NetworkPolicy, or set this to false and front it with a proxy that adds one.
LOCUS_EXTENDER_ALLOW_ANONYMOUS: bool = env.bool("LOCUS_EXTENDER_ALLOW_ANONYMOUS", default=True)
# When set, /extender/* requires `Authorization: Bearer <this token>` and nothing else.
LOCUS_EXTENDER_TOKEN: str = env.str("LOCUS_EXTENDER_TOKEN", default="")

# -- the Envoy endpoint picker (console.placement.doors.extproc, docs/gateway.md) -------------
# llm-d's ports: 9002 ext_proc, 9003 gRPC health.
LOCUS_PICKER_HOST: str = env.str("LOCUS_PICKER_HOST", default="127.0.0.1")
LOCUS_PICKER_PORT: int = env.int("LOCUS_PICKER_PORT", default=9002)
LOCUS_PICKER_HEALTH_PORT: int = env.int("LOCUS_PICKER_HEALTH_PORT", default=9003)
LOCUS_PICKER_SOURCE: str = env.str("LOCUS_PICKER_SOURCE", default="")
# Prometheus /metrics of the picker process (llm-d uses 9090); 0: not served.
LOCUS_PICKER_METRICS_PORT: int = env.int("LOCUS_PICKER_METRICS_PORT", default=0)
# Pickers on the same ports, each with its own engine (run_picker --processes; docs/gateway.md).
LOCUS_PICKER_PROCESSES: int = env.int("LOCUS_PICKER_PROCESSES", default=1)
LOCUS_PICKER_MAX_BODY_BYTES: int = env.int("LOCUS_PICKER_MAX_BODY_BYTES", default=16 * 1024 * 1024)
# Endpoints per answer, the pick first (0: the pick and every fallback). Envoy's ORIGINAL_DST
# cluster reads one ip:port from the header: give it 1.
LOCUS_PICKER_ENDPOINTS: int = env.int("LOCUS_PICKER_ENDPOINTS", default=0)
# Shed (429) when every endpoint for the model has at least this many queued requests; 0: never.
LOCUS_PICKER_SHED_QUEUE_DEPTH: int = env.int("LOCUS_PICKER_SHED_QUEUE_DEPTH", default=0)

# -- the OpenAI-compatible router (console.placement.doors.router, docs/router.md) ------------
LOCUS_ROUTER_HOST: str = env.str("LOCUS_ROUTER_HOST", default="127.0.0.1")
LOCUS_ROUTER_PORT: int = env.int("LOCUS_ROUTER_PORT", default=8100)
# The request source of calls that name none (x-locus-source header or `locus_source` field).
LOCUS_ROUTER_SOURCE: str = env.str("LOCUS_ROUTER_SOURCE", default="")
LOCUS_ROUTER_PROCESSES: int = env.int("LOCUS_ROUTER_PROCESSES", default=1)
# true: no service key asked (a trusted network only; docs/router.md, "Authentication").
LOCUS_ROUTER_OPEN: bool = env.bool("LOCUS_ROUTER_OPEN", default=False)
LOCUS_ROUTER_MAX_BODY_BYTES: int = env.int("LOCUS_ROUTER_MAX_BODY_BYTES", default=16 * 1024 * 1024)
# Shed (429) when every eligible node has at least this many queued requests; 0: never.
LOCUS_ROUTER_SHED_QUEUE_DEPTH: int = env.int("LOCUS_ROUTER_SHED_QUEUE_DEPTH", default=0)
# A node that accepts no connection within this is skipped for the next fallback.
LOCUS_ROUTER_CONNECT_TIMEOUT_SECONDS: float = env.float(
    "LOCUS_ROUTER_CONNECT_TIMEOUT_SECONDS", default=2.0
)
# Sent to the nodes as `Authorization: Bearer` (vLLM's --api-key); the client's key never is.
LOCUS_ROUTER_UPSTREAM_API_KEY: str = env.str("LOCUS_ROUTER_UPSTREAM_API_KEY", default="")
