"""What a decision is asked: the validated request (`DecisionInput`) and its names resolved
against the inventory (`request_of`), shared by the engine, the placements API, the scheduler
extender and the gateway's endpoint picker."""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.decide.request import PlacementRequest, placement_request
from optimizer.decide.state.snapshot import Snapshot


class UnknownName(ValueError):
    """The request names a model, source, site or SLO the inventory does not have."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


@dataclass(frozen=True)
class DecisionInput:
    """A validated decision request (docs/contracts.md §4, POST /api/v1/placements)."""

    model: str
    prompt_tokens: int
    max_output_tokens: int
    source: str | None = None
    site: str | None = None
    slo: str | None = None
    prefix_hashes: tuple[int, ...] = ()
    session_id: str | None = None
    explain: bool = False
    # Who asked (an identity name: `key:NAME` or a username); only it may report the outcome.
    caller: str = ""
    # Only these nodes may be picked (a gateway's endpoints or its subset hint); None: any.
    among: frozenset[str] | None = None


def request_of(snap: Snapshot, body: DecisionInput) -> PlacementRequest:
    """Resolve names against the inventory; unknown names are the caller's error (400)."""
    topology = snap.topology
    if body.model not in topology.model_by_name:
        raise UnknownName("model", f"Unknown model {body.model!r}.")
    slo = body.slo
    if body.source is not None:
        source = topology.source_by_name.get(body.source)
        if source is None:
            raise UnknownName("source", f"Unknown source {body.source!r}.")
        site = source.site
        slo = slo or source.slo
    elif body.site is not None:
        if body.site not in topology.site_by_name:
            raise UnknownName("site", f"Unknown site {body.site!r}.")
        site = body.site
    else:
        raise UnknownName("source", "Give a source, or a site for unregistered callers.")
    if slo is not None and slo not in topology.slo_by_name:
        raise UnknownName("slo", f"Unknown SLO {slo!r}.")
    return placement_request(
        topology,
        model=body.model,
        source_site=site,
        slo=slo,
        prompt_tokens=body.prompt_tokens,
        max_output_tokens=body.max_output_tokens,
        prefix_hashes=body.prefix_hashes,
        source=body.source,
    )
