"""The per-node view of the reference implementation.

Decisions run on the fleet's columns (`optimizer.decide`), the same code for the simulator and
the live engine. `NodeView` (one object per node) is the per-node form the columns replaced:
with `constraints`, `estimates`, `features` and `optimizer.reference` it is the oracle of the
parity tests, and the input of `Policy.scores` for hand-built states.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.topology import Topology


@dataclass(slots=True)
class NodeView:
    """The state of one node as a policy sees it, for the model of the request being placed.

    Static fields come from the topology (see `node_view`); the dynamic ones (`state`,
    `kv_used_bytes`, `queue_depth`, `running`, `queued_prompt_tokens`, `prefix_blocks`) from
    the simulator or from telemetry. Speeds and batch limits are already scaled by `gpus`
    (docs/contracts.md §1): `max_batch` is the node's limit of decoding sequences of this model and
    `prefill_tokens_per_s` its whole prefill rate. `prefix_blocks` is the number of leading
    blocks of the request's `prefix_hashes` cached on the node (0 when unknown).
    """

    name: str
    site: str
    tier: str
    jurisdiction: str
    accelerator: str
    gpus: int
    models: tuple[str, ...]
    state: str
    usd_per_hour: float
    kv_capacity_bytes: int
    kv_used_bytes: int
    queue_depth: int
    running: int
    max_batch: int
    prefill_tokens_per_s: float
    decode_step_ms: float
    decode_step_ms_per_seq: float
    kv_bytes_per_token: int
    queued_prompt_tokens: int = 0
    prefix_blocks: int = 0

    def cached_prefix_blocks(self, hashes: tuple[int, ...]) -> int:
        """Leading blocks of `hashes` cached here, as filled in by the view's builder."""
        return min(self.prefix_blocks, len(hashes))


def node_view(
    topology: Topology,
    node_name: str,
    model: str,
    *,
    state: str | None = None,
    kv_used_bytes: int = 0,
    queue_depth: int = 0,
    running: int = 0,
    queued_prompt_tokens: int = 0,
    prefix_blocks: int = 0,
) -> NodeView:
    """Build a view of `node_name` for requests of `model` from the topology plus live state.

    A node that does not serve `model` gets zero speeds and batch limit; the constraint filter
    rejects it before any policy sees those values.
    """
    node = topology.node_by_name[node_name]
    site = topology.site_by_name[node.site]
    profile = topology.profile_by_key.get((model, node.accelerator))
    served = profile is not None and model in node.models
    known_model = topology.model_by_name.get(model)
    return NodeView(
        name=node.name,
        site=node.site,
        tier=site.tier,
        jurisdiction=site.jurisdiction,
        accelerator=node.accelerator,
        gpus=node.gpus,
        models=node.models,
        state=node.state if state is None else state,
        usd_per_hour=node.usd_per_hour,
        kv_capacity_bytes=topology.kv_capacity_bytes(node),
        kv_used_bytes=kv_used_bytes,
        queue_depth=queue_depth,
        running=running,
        max_batch=profile.max_batch * node.gpus if served and profile else 0,
        prefill_tokens_per_s=profile.prefill_tokens_per_s * node.gpus
        if served and profile
        else 0.0,
        decode_step_ms=profile.decode_step_ms if served and profile else 0.0,
        decode_step_ms_per_seq=profile.decode_step_ms_per_seq if served and profile else 0.0,
        kv_bytes_per_token=known_model.kv_bytes_per_token if known_model else 0,
        queued_prompt_tokens=queued_prompt_tokens,
        prefix_blocks=prefix_blocks,
    )
