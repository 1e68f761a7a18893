"""What a mapper produces from one scrape: canonical gauges, counters and histograms.

Counters and histograms stay cumulative here; `derive` turns them into rates and quantiles
against the previous scrape of the same node, which is state only the ingest path holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from telemetry.parsing import LabelSet

# The canonical fields of a node (NodeTelemetry), stored as series with empty labels.
CANONICAL_FIELDS: tuple[str, ...] = (
    "queue_depth",
    "running",
    "kv_usage",
    "prefix_hit_rate",
    "gpu_util",
    "gpu_mem_used_bytes",
    "gpu_mem_total_bytes",
    "ttft_p50_s",
    "ttft_p95_s",
    "e2e_p95_s",
    "gen_tokens_per_s",
    "power_w",
    "cpu_util",
    "mem_available_bytes",
    "mem_total_bytes",
    "load1",
)
CANONICAL = frozenset(CANONICAL_FIELDS)
MIB = 1024 * 1024


def series_id(labels: LabelSet, drop: tuple[str, ...] = ()) -> str:
    """A stable text id of a label set (for keeping per-series counter state)."""
    return ",".join(f"{k}={v}" for k, v in labels if k not in drop)


def label(labels: LabelSet, name: str, default: str = "") -> str:
    for key, value in labels:
        if key == name:
            return value
    return default


@dataclass
class HistogramSeries:
    """One cumulative histogram series: its model (if any) and {upper bound: count}."""

    model: str
    buckets: dict[float, float] = field(default_factory=dict)


@dataclass
class Observation:
    """Canonical readings found in one scrape, before rates and quantiles."""

    gauges: dict[str, float] = field(default_factory=dict)
    # canonical counter name -> {series id: cumulative value}
    counters: dict[str, dict[str, float]] = field(default_factory=dict)
    # canonical histogram name ("ttft", "e2e") -> {series id: histogram}
    histograms: dict[str, dict[str, HistogramSeries]] = field(default_factory=dict)
    dropped: Counter[str] = field(default_factory=Counter)

    def add_gauge(self, name: str, value: float, how: str = "sum") -> None:
        """Aggregate several series into one node value: sum, max or mean (via _n)."""
        old = self.gauges.get(name)
        if old is None:
            self.gauges[name] = value
        elif how == "max":
            self.gauges[name] = max(old, value)
        else:
            self.gauges[name] = old + value

    def add_counter(self, name: str, series: str, value: float) -> None:
        self.counters.setdefault(name, {})[series] = value

    def add_bucket(self, name: str, series: str, model: str, le: str, value: float) -> None:
        hist = self.histograms.setdefault(name, {}).setdefault(series, HistogramSeries(model))
        hist.buckets[float(le)] = value


@dataclass(frozen=True)
class EngineMetrics:
    """The table-driven mapping of an inference engine's metrics (vLLM, SGLang): gauges with
    how several series combine, cumulative counters, and TTFT/E2E histograms labelled by
    `model_name`. `fallback_gauges` are deprecated names used only when the current name is
    absent from the scrape (resolved by the caller through the `_fallback:` prefix)."""

    gauges: Mapping[str, tuple[str, str]]
    counters: Mapping[str, str]
    histograms: Mapping[str, str]
    fallback_gauges: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def map_sample(self, obs: Observation, name: str, labels: LabelSet, value: float) -> bool:
        """Add one series to `obs`; False when the engine has nothing canonical for it."""
        if name in self.gauges:
            canonical, how = self.gauges[name]
            obs.add_gauge(canonical, value, how)
        elif name in self.fallback_gauges:
            canonical, how = self.fallback_gauges[name]
            obs.add_gauge("_fallback:" + canonical, value, how)
        elif name in self.counters:
            obs.add_counter(self.counters[name], series_id(labels), value)
        elif name in self.histograms:
            model = label(labels, "model_name")
            sid = series_id(labels, drop=("le",))
            obs.add_bucket(self.histograms[name], sid, model, label(labels, "le"), value)
        else:
            return False
        return True
