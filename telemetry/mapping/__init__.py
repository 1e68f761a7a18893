"""Exporter metrics → the canonical node fields placement needs.

`map_scrape` routes each series by its name prefix to the exporter's mapper (vLLM, SGLang,
dcgm-exporter, node_exporter); canonical names (as JSON pushes may send) pass through. Values
that are not readings (NaN, infinities, sentinels) are dropped and counted; every other series
is kept for storage whether or not a mapper knew it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from telemetry.mapping import dcgm, node_exporter, sglang, vllm
from telemetry.mapping.base import CANONICAL, CANONICAL_FIELDS, Observation
from telemetry.parsing import LabelSet, Scrape, SeriesKey

__all__ = ["CANONICAL_FIELDS", "MappedScrape", "Observation", "map_scrape"]

_Mapper = Callable[[Observation, str, LabelSet, float], bool]
_MAPPERS: tuple[tuple[str, _Mapper], ...] = (
    (vllm.PREFIX, vllm.map_sample),
    (sglang.PREFIX, sglang.map_sample),
    (dcgm.PREFIX, dcgm.map_sample),
    (node_exporter.PREFIX, node_exporter.map_sample),
)


@dataclass
class MappedScrape:
    """A scrape split into the values to store and the canonical observation."""

    kept: dict[SeriesKey, float]
    observation: Observation
    unmapped: int


def _drop_reason(name: str, value: float) -> str | None:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf"
    if abs(value) >= 9.0e18 or (name.startswith(dcgm.PREFIX) and dcgm.is_blank(value)):
        return "sentinel"
    return None


_routes: dict[str, _Mapper | None] = {}


def _route(name: str) -> _Mapper | None:
    """The mapper for a metric name (cached: a fleet has a few thousand distinct names)."""
    try:
        return _routes[name]
    except KeyError:
        pass
    found = next((m for prefix, m in _MAPPERS if name.startswith(prefix)), None)
    if len(_routes) < 100_000:
        _routes[name] = found
    return found


def map_scrape(scrape: Scrape) -> MappedScrape:
    obs = Observation()
    values = scrape.values
    kept: dict[SeriesKey, float] = values
    unmapped = 0
    isfinite = math.isfinite
    gauges = obs.gauges
    for key, value in values.items():
        name, labels = key
        # Fast path first: a finite, modest value needs no further checks.
        if not (isfinite(value) and -2.0e9 < value < 2.0e9):
            reason = _drop_reason(name, value)
            if reason is not None:
                obs.dropped[reason] += 1
                if kept is values:
                    kept = dict(values)
                del kept[key]
                continue
        if name in CANONICAL and not labels:
            gauges[name] = value
            continue
        mapper = _route(name)
        if mapper is None or not mapper(obs, name, labels, value):
            unmapped += 1
    dcgm.finish(obs)
    for fallback in [k for k in gauges if k.startswith("_fallback:")]:
        value = gauges.pop(fallback)
        gauges.setdefault(fallback.removeprefix("_fallback:"), value)
    return MappedScrape(kept=kept, observation=obs, unmapped=unmapped)
