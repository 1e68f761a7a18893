"""Observations: what happened to each request, in one JSONL format (docs/contracts.md §5).

One request a line, and a valid Mooncake trace (docs/traces.md): `timestamp` (ms),
`input_length`, `output_length`, `hash_ids`, plus `source`, `model`, `slo`, `node` (null when
rejected), `ttft_ms`, `e2e_ms` (null when not served) and `ok`. A request sent by a caller
without a registered source carries its `site` instead (an extra field), and a split request
(issue #30) its `prefill_node` (the node that ran its prefill; `node` decoded it). Written by
`simulate --requests-out`, by the console's `export_observations` and
`GET /api/v1/observations`; read by `calibrate` (docs/twin.md). Only block hashes travel,
never prompt text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from optimizer.arrivals import draw_requests
from optimizer.decide.request import PlacementRequest
from optimizer.errors import InputFileError
from optimizer.sim.engine import SimResult
from optimizer.sim.requests import SERVED
from optimizer.topology import Topology
from optimizer.traces import TraceRequest, json_lines, mooncake_request

OBSERVATION_FIELDS = (
    "timestamp",
    "input_length",
    "output_length",
    "hash_ids",
    "source",
    "model",
    "slo",
    "node",
    "ttft_ms",
    "e2e_ms",
    "ok",
)


def observation_record(
    *,
    timestamp_ms: float,
    input_length: int,
    output_length: int,
    hash_ids: Sequence[int],
    source: str | None,
    model: str,
    slo: str | None,
    node: str | None,
    ttft_ms: float | None,
    e2e_ms: float | None,
    ok: bool,
    site: str | None = None,
    prefill_node: str | None = None,
) -> dict[str, Any]:
    """One line's object, fields in the documented order (`site` only for a request without
    a registered source, `prefill_node` only for a split one). Times are rounded to the
    microsecond."""
    record: dict[str, Any] = {
        "timestamp": round(timestamp_ms, 3),
        "input_length": input_length,
        "output_length": output_length,
        "hash_ids": list(hash_ids),
        "source": source,
        "model": model,
        "slo": slo,
        "node": node,
        "ttft_ms": None if ttft_ms is None else round(ttft_ms, 3),
        "e2e_ms": None if e2e_ms is None else round(e2e_ms, 3),
        "ok": ok,
    }
    if source is None and site is not None:
        record["site"] = site
    if prefill_node is not None:
        record["prefill_node"] = prefill_node
    return record


def observation_line(record: dict[str, Any]) -> str:
    """The JSONL text of one record (compact, no NaN, newline-terminated)."""
    return json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n"


class TextSink(Protocol):
    """Anything text can be written to (a file, a response, a management command's stdout)."""

    def write(self, text: str, /) -> Any: ...


def write_observations(out: TextSink, records: Iterable[dict[str, Any]]) -> int:
    """Write records as JSONL; return how many."""
    count = 0
    for record in records:
        out.write(observation_line(record))
        count += 1
    return count


def simulated_observations(result: SimResult, topology: Topology) -> Iterator[dict[str, Any]]:
    """What a simulation run observed, one record per request in arrival order."""
    t = result.table
    for rid, request in enumerate(t.requests):
        served = t.status[rid] == SERVED
        node = t.node[rid]
        prefill = t.prefill_node[rid]
        yield observation_record(
            timestamp_ms=t.arrival[rid] * 1000.0,
            input_length=request.prompt_tokens,
            output_length=request.max_output_tokens,
            hash_ids=request.prefix_hashes,
            source=request.source,
            site=request.source_site,
            model=request.model,
            slo=request.slo,
            node=topology.nodes[node].name if node >= 0 else None,
            ttft_ms=t.ttft[rid] * 1000.0 if served else None,
            e2e_ms=t.e2e[rid] * 1000.0 if served else None,
            ok=served,
            prefill_node=topology.nodes[prefill].name if node >= 0 and prefill >= 0 else None,
        )


@dataclass(frozen=True)
class Observations:
    """A loaded observations file, in arrival order: the requests as a trace replays them,
    the node each went to (None: rejected), a split request's prefill node (None: not split)
    and what was measured (NaN: not served)."""

    path: str
    arrival_s: list[float]
    requests: list[PlacementRequest]
    node: list[str | None]
    ttft_s: np.ndarray
    e2e_s: np.ndarray
    ok: np.ndarray
    prefill_node: list[str | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.prefill_node:  # built without one: no request was split
            object.__setattr__(self, "prefill_node", [None] * len(self.requests))

    def __len__(self) -> int:
        return len(self.requests)

    @property
    def measured(self) -> np.ndarray:
        """Requests that were served, succeeded and have both latencies."""
        return self.ok & np.isfinite(self.ttft_s) & np.isfinite(self.e2e_s)


def _latency(item: dict[str, Any], name: str, where: str) -> float:
    value = item.get(name)
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{where}: field '{name}': expected milliseconds, got {value!r}")
    if value < 0 or value > 1e9:
        raise ValueError(f"{where}: field '{name}': must be within 0..1e9 ms, got {value!r}")
    return float(value) / 1000.0


def _node(item: dict[str, Any], name: str, where: str, topology: Topology) -> str | None:
    node = item.get(name)
    if node is not None and (not isinstance(node, str) or node not in topology.node_by_name):
        raise ValueError(f"{where}: field '{name}': unknown node {node!r}")
    return node


def _outcome(
    item: dict[str, Any], where: str, topology: Topology
) -> tuple[str | None, float, float, bool, str | None]:
    for name in ("node", "ttft_ms", "e2e_ms", "ok"):
        if name not in item:
            raise ValueError(f"{where}: field '{name}' is missing")
    node = _node(item, "node", where, topology)
    prefill = _node(item, "prefill_node", where, topology)
    if prefill is not None and node is None:
        raise ValueError(f"{where}: field 'prefill_node': a rejected request has none")
    ok = item["ok"]
    if not isinstance(ok, bool):
        raise ValueError(f"{where}: field 'ok': expected true or false, got {ok!r}")
    ttft, e2e = _latency(item, "ttft_ms", where), _latency(item, "e2e_ms", where)
    if ttft > e2e:
        raise ValueError(f"{where}: field 'e2e_ms': must not be less than ttft_ms")
    return node, ttft, e2e, ok, prefill


def _check_route(
    request: PlacementRequest, node: str, where: str, topology: Topology, name: str = "node"
) -> None:
    entry = topology.node_by_name[node]
    if request.model not in entry.models:
        raise ValueError(f"{where}: field '{name}': {node!r} does not serve {request.model!r}")
    if (request.source_site, entry.site) not in topology.routes:
        raise ValueError(
            f"{where}: field '{name}': {node!r} is unreachable from site {request.source_site!r}"
        )


def _check_split(
    request: PlacementRequest, node: str, prefill: str, where: str, topology: Topology
) -> None:
    """A split request's prefill node serves its model, is reachable from its source, and its
    KV can reach the decode node (a link joins their sites, or they share one)."""
    _check_route(request, prefill, where, topology, "prefill_node")
    a, b = topology.node_by_name[prefill].site, topology.node_by_name[node].site
    if (a, b) not in topology.routes:
        raise ValueError(
            f"{where}: field 'prefill_node': no link from {prefill!r} to decode node {node!r}"
        )


def load_observations(path: str | Path, topology: Topology, *, seed: int = 0) -> Observations:
    """Read and check an observations file against `topology`; raise InputFileError naming
    the file and line of the first bad line. Arrivals are made relative to the first."""
    p = Path(path)
    rows: list[tuple[TraceRequest, str | None, float, float, bool, str | None]] = []
    try:
        for item, where in json_lines(p):
            rows.append((mooncake_request(item, where), *_outcome(item, where, topology)))
    except OSError as exc:
        raise InputFileError(str(p), [f"{p}: cannot read file: {exc.strerror}"]) from exc
    except UnicodeDecodeError as exc:
        raise InputFileError(str(p), [f"{p}: not UTF-8 text ({exc.reason})"]) from exc
    except ValueError as exc:
        raise InputFileError(str(p), [str(exc)]) from exc
    if not rows:
        raise InputFileError(str(p), [f"{p}: the file has no observations"])
    rows.sort(key=lambda row: row[0].arrival_s)
    start = rows[0][0].arrival_s
    trace = [replace(row[0], arrival_s=row[0].arrival_s - start) for row in rows]
    requests = draw_requests(trace, topology, seed)
    nodes = [row[1] for row in rows]
    prefill_nodes = [row[5] for row in rows]
    try:
        for arrival, request, node, prefill in zip(
            trace, requests, nodes, prefill_nodes, strict=True
        ):
            if node is not None:
                _check_route(request, node, arrival.where, topology)
            if node is not None and prefill is not None:
                _check_split(request, node, prefill, arrival.where, topology)
    except ValueError as exc:
        raise InputFileError(str(p), [str(exc)]) from exc
    return Observations(
        path=str(p),
        arrival_s=[r.arrival_s for r in trace],
        requests=requests,
        node=nodes,
        ttft_s=np.array([row[2] for row in rows]),
        e2e_s=np.array([row[3] for row in rows]),
        ok=np.array([row[4] and row[1] is not None for row in rows], dtype=bool),
        prefill_node=prefill_nodes,
    )
