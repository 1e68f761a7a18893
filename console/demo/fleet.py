"""A simulated fleet driven in real time by a trace, placed by the real decision API.

The optimizer's simulator plays the fleet: each arrival of the trace (repeated to fill the
run) is sent to `POST /api/v1/placements` with a service key, the request is handed to the
node the API chose, and when the simulator finishes it the outcome (TTFT, end-to-end latency)
is posted back. The simulator's node state feeds the exporter endpoints (`exporters.py`) that
the console's telemetry pipeline scrapes, which closes the loop: decisions → load →
telemetry → snapshot → decisions.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import requests
from tenacity import retry, stop_after_delay, wait_exponential

from optimizer.decide.registry import get_policy
from optimizer.decide.request import PlacementRequest
from optimizer.emulator.metrics import EngineCounters
from optimizer.sim import Simulator
from optimizer.sim.requests import FAILED, SERVED
from optimizer.topology import GIB, Topology
from optimizer.traces import TraceRequest, draw_requests

logger = logging.getLogger(__name__)


@dataclass
class FleetStats:
    decisions: int = 0
    unplaceable: int = 0
    outcomes: int = 0
    api_errors: int = 0


def repeat_trace(trace: list[TraceRequest], seconds: float) -> list[TraceRequest]:
    """The trace played back to back until `seconds` of arrivals; each repetition's blocks get
    fresh ids, so a replay is new traffic rather than a perfect cache hit."""
    span = trace[-1].arrival_s + 1.0
    out: list[TraceRequest] = []
    offset, round_no = 0.0, 0
    top = max((max(r.hash_ids, default=0) for r in trace), default=0) + 1
    while offset < seconds:
        for r in trace:
            out.append(
                TraceRequest(
                    arrival_s=r.arrival_s + offset,
                    prompt_tokens=r.prompt_tokens,
                    output_tokens=r.output_tokens,
                    hash_ids=tuple(h + round_no * top for h in r.hash_ids),
                )
            )
        offset += span
        round_no += 1
    return out


class DemoFleet:
    """Runs the simulator against the wall clock and the decision API."""

    def __init__(
        self,
        *,
        topology: Topology,
        trace: list[TraceRequest],
        api: str,
        key: str,
        speed: float = 1.0,
        seed: int = 0,
    ) -> None:
        self.topology = topology
        self.node_names = {n.name for n in topology.nodes}
        self.requests: list[PlacementRequest] = draw_requests(trace, topology, seed)
        self.arrivals = [r.arrival_s for r in trace]
        # The local policy is never consulted: every placement comes from the API.
        self.sim = Simulator(
            topology, get_policy("round-robin", topology), self.requests, self.arrivals
        )
        self.api = api.rstrip("/")
        self.speed = speed
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {key}"
        self.counters = {n.name: EngineCounters() for n in topology.nodes}
        self.decision_ids: dict[int, str] = {}
        self.stats = FleetStats()
        self._resolved_seen = 0
        self._index = {n.name: i for i, n in enumerate(topology.nodes)}
        self._served_model = {n.name: n.models[0] for n in topology.nodes}

    # -- state for the exporters -----------------------------------------------------------
    def node_state(self, name: str) -> dict[str, Any]:
        node = self.sim.nodes[self._index[name]]
        spec = self.topology.node_by_name[name]
        capacity = self.topology.kv_capacity_bytes(spec)
        weights = sum(self.topology.model_by_name[m].memory_gib for m in spec.models) * GIB
        memory = self.topology.accelerator_by_name[spec.accelerator].memory_gib * GIB
        max_batch = sum(node.max_batch.values()) or 1
        return {
            "model": self._served_model[name],
            "running": node.running,
            "waiting": max(0, node.in_flight - node.running),
            "kv_usage": node.reserved / capacity if capacity else 0.0,
            "busy": min(1.0, node.running / max_batch + (0.3 if node.running else 0.0)),
            "gpus": spec.gpus,
            "accelerator": spec.accelerator,
            "memory_bytes_per_gpu": memory,
            "used_bytes": weights + node.reserved,
            "counters": self.counters[name],
        }

    # -- the loop --------------------------------------------------------------------------
    def run(self, *, duration_s: float | None = None, tick_s: float = 0.05) -> FleetStats:
        self.sim.start()
        started = time.monotonic()
        while duration_s is None or time.monotonic() - started < duration_s:
            now = (time.monotonic() - started) * self.speed
            while (rid := self.sim.advance(until=now)) is not None:
                self._place(rid)
            self._report_resolved()
            if self.sim.next_arrival >= len(self.arrivals) and not self.decision_ids:
                break
            time.sleep(tick_s)
        return self.stats

    def _place(self, rid: int) -> None:
        request = self.requests[rid]
        body = {
            "model": request.model,
            "source": request.source,
            "prompt_tokens": request.prompt_tokens,
            "max_output_tokens": request.max_output_tokens,
            "prefix_hashes": list(request.prefix_hashes[:4096]),
            "session_id": f"demo-{rid % 997}",
        }
        try:
            answer = self._post("/api/v1/placements", body)
        except requests.RequestException as exc:
            self.stats.api_errors += 1
            logger.warning("decision request failed: %s", exc)
            return
        if answer.status_code == 503:
            self.stats.unplaceable += 1
            return
        if answer.status_code != 200:
            self.stats.api_errors += 1
            logger.warning("decision refused (%s): %s", answer.status_code, answer.text[:200])
            return
        decision = answer.json()
        candidates = self.sim.candidates(rid)
        allowed = dict(zip(candidates.names, candidates.index.tolist(), strict=True))
        for name in (decision["node"], *decision["fallbacks"]):
            if name in allowed:
                self.sim.send(rid, allowed[name], self.sim.now)
                self.decision_ids[rid] = decision["decision_id"]
                self.stats.decisions += 1
                return
        self.stats.unplaceable += 1

    def _report_resolved(self) -> None:
        table = self.sim.table
        resolved = table.resolved
        while self._resolved_seen < len(resolved):
            rid = resolved[self._resolved_seen]
            self._resolved_seen += 1
            decision_id = self.decision_ids.get(rid)
            if decision_id is None or table.status[rid] not in (SERVED, FAILED):
                continue  # a first token (the finish comes later) or a rejection
            del self.decision_ids[rid]
            ok = table.status[rid] == SERVED
            name = self.topology.nodes[table.node[rid]].name
            if ok:
                self._count(name, rid)
            outcome = {
                "ok": ok,
                "ttft_ms": table.ttft[rid] * 1000 if ok else None,
                "e2e_ms": table.e2e[rid] * 1000 if ok else None,
            }
            try:
                self._post(f"/api/v1/placements/{decision_id}/outcome", outcome)
                self.stats.outcomes += 1
            except requests.RequestException as exc:
                self.stats.api_errors += 1
                logger.warning("outcome report failed: %s", exc)

    def _count(self, name: str, rid: int) -> None:
        table = self.sim.table
        c = self.counters[name]
        c.prompt_tokens += table.prompt[rid]
        c.cached_tokens += table.cached[rid]
        c.generated_tokens += table.output[rid]
        c.finished += 1
        c.ttft.observe(table.ttft[rid])
        c.e2e.observe(table.e2e[rid])

    @retry(wait=wait_exponential(multiplier=0.2, max=2), stop=stop_after_delay(5), reraise=True)
    def _post(self, path: str, body: dict[str, Any]) -> requests.Response:
        return self.session.post(self.api + path, json=body, timeout=5)
