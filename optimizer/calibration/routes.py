"""The network terms of each observed request's TTFT: fixed ones, and those of fitted links.

A one-node request crosses one route (source site → node site): half its RTT on the way in,
its prompt's bytes at the route's bandwidth, and half on the way back. A split request (issue
#30, `optimizer/sim/split.py`) crosses three legs: source → prefill node (half the RTT and the
prompt's bytes), prefill node → decode node (the link's full RTT and the prompt's KV at the
link's bandwidth; `INTRA_SITE_KV_GBPS` within a site, never fitted) and decode node → source
(half the RTT). Each leg's RTT is either fixed (its link not fitted) or a coefficient on the
link's RTT in θ (1 for a full RTT, 0.5 for a half); each leg's bytes either a fixed time or
a coefficient on the link's seconds per byte (1 / bandwidth) in θ, so the TTFT row stays
linear in θ (docs/twin.md, "Method").
"""

from __future__ import annotations

import numpy as np

from optimizer.calibration.equations import Layout
from optimizer.decide.state.estimates import PROMPT_BYTES_PER_TOKEN
from optimizer.decide.state.fleet import INTRA_SITE_KV_GBPS
from optimizer.observations import Observations
from optimizer.topology import Topology

INTRA_SITE_S_PER_BYTE = 8.0 / (INTRA_SITE_KV_GBPS * 1e9)


class Routes:
    """Per request, over the link columns of θ (its RTT links, then its transfer links):

    - `transfer`, `rtt_fixed`: the transfer and RTT seconds of legs over links not fitted;
    - `coef`: the coefficients of the fitted links in its TTFT row;
    - `to_fixed`, `to_coef`: the same for the way in to the (prefill) node beyond what the
      replay's `half_rtt` holds (a one-node request: its prompt's transfer; a split one: the
      whole leg, as its `half_rtt` is the decode node's);
    - `kv_fixed`, `kv_coef`: a split request's KV leg (0 for the others);
    - `split`: whether it was split.

    `link` (-1: not fitted) is kept for one-node requests: the RTT link of its route."""

    def __init__(self, topology: Topology, observations: Observations, layout: Layout) -> None:
        pairs = [frozenset((lk.a, lk.b)) for lk in topology.links]
        self._rtt_col = {pairs[i]: j for j, i in enumerate(layout.links)}
        self._spb_col = {pairs[i]: len(layout.links) + j for j, i in enumerate(layout.transfers)}
        n, width = len(observations), len(layout.links) + len(layout.transfers)
        self.link = np.full(n, -1, dtype=np.int64)
        self.transfer = np.zeros(n)
        self.rtt_fixed = np.zeros(n)
        self.coef = np.zeros((n, width))
        self.to_fixed = np.zeros(n)
        self.to_coef = np.zeros((n, width))
        self.kv_fixed = np.zeros(n)
        self.kv_coef = np.zeros((n, width))
        self.split = np.array([p is not None for p in observations.prefill_node], dtype=bool)
        self._routes = topology.routes
        kv_per_token = {m.name: m.kv_bytes_per_token for m in topology.models}
        for rid, (request, node, prefill) in enumerate(
            zip(observations.requests, observations.node, observations.prefill_node, strict=True)
        ):
            if node is None:
                continue
            source, site = request.source_site, topology.node_by_name[node].site
            prompt_bytes = PROMPT_BYTES_PER_TOKEN * request.prompt_tokens
            if prefill is None:
                self._one_node(rid, source, site, prompt_bytes)
                continue
            first = topology.node_by_name[prefill].site
            self._rtt(rid, source, first, 0.5, self.to_fixed, self.to_coef)
            self._bytes(rid, source, first, prompt_bytes, self.to_fixed, self.to_coef)
            self._rtt(rid, first, site, 1.0, self.kv_fixed, self.kv_coef)
            kv_bytes = request.prompt_tokens * kv_per_token[request.model]
            self._bytes(
                rid, first, site, kv_bytes, self.kv_fixed, self.kv_coef, INTRA_SITE_S_PER_BYTE
            )
            self._rtt(rid, source, site, 0.5, None, None)

    def _one_node(self, rid: int, source: str, site: str, prompt_bytes: int) -> None:
        """As before split requests existed, so a file without them fits exactly as it did."""
        route = self._routes[(source, site)]
        pair = frozenset((source, site))
        if site != source and pair in self._spb_col:
            self.coef[rid, self._spb_col[pair]] += prompt_bytes
            self.to_coef[rid, self._spb_col[pair]] += prompt_bytes
        else:
            self.transfer[rid] = prompt_bytes * route.s_per_byte
            self.to_fixed[rid] = self.transfer[rid]
        if site != source:
            self.link[rid] = self._rtt_col.get(pair, -1)
        if self.link[rid] < 0:
            self.rtt_fixed[rid] = route.rtt_s
        else:
            self.coef[rid, self.link[rid]] = 1.0

    def _rtt(
        self,
        rid: int,
        a: str,
        b: str,
        share: float,
        fixed: np.ndarray | None,
        coef: np.ndarray | None,
    ) -> None:
        """Add `share` of the RTT between sites a and b to the TTFT row (and to a leg)."""
        col = self._rtt_col.get(frozenset((a, b))) if a != b else None
        if col is None:
            seconds = share * self._routes[(a, b)].rtt_s
            self.rtt_fixed[rid] += seconds
            if fixed is not None:
                fixed[rid] += seconds
        else:
            self.coef[rid, col] += share
            if coef is not None:
                coef[rid, col] += share

    def _bytes(
        self,
        rid: int,
        a: str,
        b: str,
        count: int,
        fixed: np.ndarray,
        coef: np.ndarray,
        within_site: float = 0.0,
    ) -> None:
        """Add the transfer of `count` bytes from site a to b to the TTFT row and to a leg;
        `within_site`: seconds per byte when a == b (a prompt: none; KV: the fabric's)."""
        col = self._spb_col.get(frozenset((a, b))) if a != b else None
        if col is None:
            per_byte = self._routes[(a, b)].s_per_byte if a != b else within_site
            self.transfer[rid] += count * per_byte
            fixed[rid] += count * per_byte
        else:
            self.coef[rid, col] += count
            coef[rid, col] += count
