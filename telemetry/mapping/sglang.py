"""SGLang's Prometheus metrics.

Source: https://docs.sglang.ai/references/production_metrics.html and
sglang/srt/metrics/collector.py. `token_usage` is used KV-pool tokens over the pool size, the
same quantity as vLLM's KV-cache usage (SGLang has no metric named as a KV percentage).
"""

from __future__ import annotations

from telemetry.mapping.base import Observation, label, series_id
from telemetry.parsing import LabelSet

PREFIX = "sglang:"
_GAUGES = {
    "sglang:num_queue_reqs": ("queue_depth", "sum"),
    "sglang:num_running_reqs": ("running", "sum"),
    "sglang:token_usage": ("kv_usage", "max"),
    "sglang:cache_hit_rate": ("prefix_hit_rate", "max"),
    "sglang:gen_throughput": ("gen_tokens_per_s", "sum"),
}
_COUNTERS = {"sglang:generation_tokens_total": "gen_tokens"}
_HISTOGRAMS = {
    "sglang:time_to_first_token_seconds_bucket": "ttft",
    "sglang:e2e_request_latency_seconds_bucket": "e2e",
}


def map_sample(obs: Observation, name: str, labels: LabelSet, value: float) -> bool:
    if name in _GAUGES:
        field, how = _GAUGES[name]
        obs.add_gauge(field, value, how)
    elif name in _COUNTERS:
        obs.add_counter(_COUNTERS[name], series_id(labels), value)
    elif name in _HISTOGRAMS:
        model = label(labels, "model_name")
        sid = series_id(labels, drop=("le",))
        obs.add_bucket(_HISTOGRAMS[name], sid, model, label(labels, "le"), value)
    else:
        return False
    return True
