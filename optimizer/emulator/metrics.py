"""vLLM's `/metrics`, rendered from a node model's state.

The names, help texts, labels and histogram buckets are vLLM's v1 engine's
(vllm/v1/metrics/loggers.py, `PrometheusStatLogger`): `vllm:num_requests_running` and
`_waiting`, `vllm:kv_cache_usage_perc` (a fraction despite the name), the prefix-cache
counters in tokens, prompt and generation token counters, finished requests, and the TTFT and
end-to-end latency histograms, each labelled `model_name` and `engine`. The text is rendered by
prometheus_client, as vLLM renders its own; the emulated nodes (`optimizer.emulator`) render
through `render_vllm`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

# vLLM's buckets (vllm/v1/metrics/loggers.py): time to first token, and request latency.
TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
E2E_BUCKETS = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class Histogram:
    """A Prometheus histogram's state: observations per bucket (not cumulative), sum, count."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * len(self.bounds)

    def observe(self, value: float) -> None:
        # A bucket holds values <= its bound: the first bound >= value; beyond the last bound
        # a value is counted in +Inf only (`count`).
        self.total += value
        self.count += 1
        bucket = bisect_left(self.bounds, value)
        if bucket < len(self.bounds):
            self.counts[bucket] += 1

    def cumulative(self) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip(self.bounds, self.counts, strict=True):
            running += count
            out.append((repr(bound), running))
        out.append(("+Inf", self.count))
        return out


@dataclass
class EngineCounters:
    """Cumulative counters of one model on one node (tokens, requests, latencies)."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    generated_tokens: int = 0
    finished: int = 0
    ttft: Histogram = field(default_factory=lambda: Histogram(TTFT_BUCKETS))
    e2e: Histogram = field(default_factory=lambda: Histogram(E2E_BUCKETS))


@dataclass(frozen=True)
class EngineState:
    """What one model's engine on a node reports at a scrape: scheduler gauges, counters, and
    `generating`, the tokens already produced by running requests (not yet in `counters`)."""

    model: str
    running: int
    waiting: int
    kv_usage: float
    counters: EngineCounters
    generating: int = 0


def vllm_families(engines: Sequence[EngineState]) -> Iterator[Metric]:
    """The metric families of a vLLM server running `engines` (one per served model)."""
    labels = ["model_name", "engine"]
    gauges = (
        ("vllm:num_requests_running", "Number of requests in model execution batches."),
        ("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
        ("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
    )
    for i, (name, doc) in enumerate(gauges):
        gauge = GaugeMetricFamily(name, doc, labels=labels)
        for e in engines:
            gauge.add_metric([e.model, "0"], (e.running, e.waiting, e.kv_usage)[i])
        yield gauge
    counters = (
        (
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
        ),
        ("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens."),
        ("vllm:prompt_tokens", "Number of prefill tokens processed."),
        ("vllm:generation_tokens", "Number of generation tokens processed."),
        ("vllm:request_success", "Count of successfully processed requests."),
    )
    for i, (name, doc) in enumerate(counters):
        counter = CounterMetricFamily(name, doc, labels=labels)
        for e in engines:
            c = e.counters
            values = (
                c.prompt_tokens,
                c.cached_tokens,
                c.prompt_tokens,
                c.generated_tokens + e.generating,
                c.finished,
            )
            counter.add_metric([e.model, "0"], values[i])
        yield counter
    histograms = (
        ("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds."),
        ("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds."),
    )
    for i, (name, doc) in enumerate(histograms):
        family = HistogramMetricFamily(name, doc, labels=labels)
        for e in engines:
            h = (e.counters.ttft, e.counters.e2e)[i]
            family.add_metric([e.model, "0"], h.cumulative(), h.total)
        yield family


class _Engines(Collector):
    def __init__(self, engines: Sequence[EngineState]) -> None:
        self.engines = engines

    def collect(self) -> Iterator[Metric]:
        return vllm_families(self.engines)


def render_vllm(engines: Sequence[EngineState]) -> bytes:
    """The text exposition a vLLM server with these engines serves at `/metrics`."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Engines(engines))
    return generate_latest(registry)
