"""The request a decision places, and its targets.

Every decision path places a `PlacementRequest`: the console's doors fill one through the
runtime, the simulator and the Gymnasium env read them from traces. It is the GIE EPP's
`LLMRequest` (pkg/epp/scheduling/types): what the filters, scorers and picker see of the
request, nothing of the transport it came on.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.topology import Topology

# Tokens per KV block named by one prefix hash: Mooncake's traces hash 512-token blocks
# (docs/traces.md), so live callers must hash their prompts in 512-token blocks too.
BLOCK_TOKENS = 512


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """One request to place: what it asks for and where it comes from.

    `source_site` is the site the prompt comes from (a source's site, or a bare site for
    callers without a registered source); `slo` names one of the topology's SLOs (None: no
    targets); `residency` is the jurisdiction the request must stay in (copied from the SLO,
    so the constraint check never has to look the SLO up); `prefix_hashes` are the ids of the
    prompt's `BLOCK_TOKENS`-token blocks in order.
    """

    model: str
    source_site: str
    slo: str | None
    prompt_tokens: int
    max_output_tokens: int
    prefix_hashes: tuple[int, ...] = ()
    residency: str | None = None
    source: str | None = None


def placement_request(
    topology: Topology,
    *,
    model: str,
    source_site: str,
    slo: str | None,
    prompt_tokens: int,
    max_output_tokens: int,
    prefix_hashes: tuple[int, ...] = (),
    source: str | None = None,
) -> PlacementRequest:
    """A request whose residency is taken from its SLO, as both callers must do it."""
    slo_entry = topology.slo_by_name.get(slo) if slo is not None else None
    return PlacementRequest(
        model=model,
        source_site=source_site,
        slo=slo,
        prompt_tokens=prompt_tokens,
        max_output_tokens=max_output_tokens,
        prefix_hashes=prefix_hashes,
        residency=slo_entry.residency if slo_entry is not None else None,
        source=source,
    )


def slo_targets_s(request: PlacementRequest, topology: Topology) -> tuple[float, float]:
    """The request's (TTFT, E2E) targets in seconds; without an SLO, generous defaults of
    10 s and 120 s (the contract example's batch class) so estimates stay comparable."""
    slo = topology.slo_by_name.get(request.slo) if request.slo is not None else None
    if slo is None:
        return 10.0, 120.0
    return slo.ttft_p95_ms / 1000.0, slo.e2e_p95_ms / 1000.0
