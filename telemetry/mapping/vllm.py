"""vLLM's Prometheus metrics (v1 engine names, with the deprecated v0 ones as fallbacks).

Source: https://docs.vllm.ai/en/latest/design/metrics.html and vllm/v1/metrics/loggers.py.
One vLLM server may expose several engines or models (labels `engine`, `model_name`): request
counts add up, KV usage takes the fullest engine (the one that refuses work first).
"""

from __future__ import annotations

from telemetry.mapping.base import Observation, label, series_id
from telemetry.parsing import LabelSet

PREFIX = "vllm:"
_GAUGES = {
    "vllm:num_requests_waiting": ("queue_depth", "sum"),
    "vllm:num_requests_running": ("running", "sum"),
    "vllm:kv_cache_usage_perc": ("kv_usage", "max"),  # a fraction 0..1 despite the name
    "vllm:gpu_prefix_cache_hit_rate": ("prefix_hit_rate", "max"),  # v0 engine
    "vllm:avg_generation_throughput_toks_per_s": ("gen_tokens_per_s", "sum"),  # v0 engine
}
# Deprecated names used only when the current name is absent from the scrape.
_FALLBACK_GAUGES = {"vllm:gpu_cache_usage_perc": ("kv_usage", "max")}
_COUNTERS = {
    "vllm:generation_tokens_total": "gen_tokens",
    "vllm:prefix_cache_hits_total": "prefix_hits",  # counted in tokens
    "vllm:prefix_cache_queries_total": "prefix_queries",
}
_HISTOGRAMS = {
    "vllm:time_to_first_token_seconds_bucket": "ttft",
    "vllm:e2e_request_latency_seconds_bucket": "e2e",
}


def map_sample(obs: Observation, name: str, labels: LabelSet, value: float) -> bool:
    """Add one series to `obs`; False when vLLM has nothing canonical for it."""
    if name in _GAUGES:
        field, how = _GAUGES[name]
        obs.add_gauge(field, value, how)
    elif name in _FALLBACK_GAUGES:
        field, how = _FALLBACK_GAUGES[name]
        obs.add_gauge("_fallback:" + field, value, how)
    elif name in _COUNTERS:
        obs.add_counter(_COUNTERS[name], series_id(labels), value)
    elif name in _HISTOGRAMS:
        model = label(labels, "model_name")
        sid = series_id(labels, drop=("le",))
        obs.add_bucket(_HISTOGRAMS[name], sid, model, label(labels, "le"), value)
    else:
        return False
    return True
