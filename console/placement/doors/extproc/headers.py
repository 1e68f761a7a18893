"""The request headers the picker reads, under llm-d's current names and their old ones.

llm-d's router (v0.10, where the endpoint picker moved from the Gateway API Inference
Extension) renamed the headers it reads and keeps the old names as deprecated aliases:
`pkg/epp/metadata/consts.go` in llm-d/llm-d-router lists `x-llm-d-inference-objective`,
`x-llm-d-model-name-rewrite`, `x-llm-d-inference-fairness-id` and `x-llm-d-slo-ttft-ms`, each
with its `x-gateway-*` (or `x-slo-ttft-ms`) alias, and `GetLowerCaseHeaderValue` returns the
current name's value when that header is present (even empty), the alias's only when it is
not. The picker reads them the same way, so one gateway config serves both generations.
"""

from __future__ import annotations

SOURCE = "x-locus-source"
SESSION = "x-session-token"
DECISION = "x-locus-decision-id"
# The current name first, then the deprecated alias, as llm-d's `headerAliases`.
OBJECTIVE = ("x-llm-d-inference-objective", "x-gateway-inference-objective")
REWRITE = ("x-llm-d-model-name-rewrite", "x-gateway-model-name-rewrite")
FAIRNESS = ("x-llm-d-inference-fairness-id", "x-gateway-inference-fairness-id")
TTFT = ("x-llm-d-slo-ttft-ms", "x-slo-ttft-ms")
# The prefill node for llm-d's routing sidecar on the decode node (llm-d/llm-d-router
# `pkg/common/routing/common.go`, `PrefillEndpointHeader`): one `host:port`, as the disagg
# profile handler writes it (`net.JoinHostPort(address, port)`). The sidecar runs both phases
# locally when it is absent, so the picker removes a client's own on an unsplit decision, as
# the profile handler deletes it before it decides.
PREFILLER = "x-prefiller-host-port"


def read(headers: dict[str, str], names: tuple[str, ...]) -> tuple[str, str | None]:
    """(the name read, its value or None): the first of `names` present in `headers`; the
    current name when none is (so an error names the header a client should send)."""
    for name in names:
        if name in headers:
            return name, headers[name]
    return names[0], None
