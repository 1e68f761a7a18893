"""SGLang's Prometheus metrics.

Source: https://docs.sglang.ai/references/production_metrics.html and
sglang/srt/metrics/collector.py. `token_usage` is used KV-pool tokens over the pool size, the
same quantity as vLLM's KV-cache usage (SGLang has no metric named as a KV percentage).
"""

from __future__ import annotations

from telemetry.mapping.base import EngineMetrics

PREFIX = "sglang:"
METRICS = EngineMetrics(
    gauges={
        "sglang:num_queue_reqs": ("queue_depth", "sum"),
        "sglang:num_running_reqs": ("running", "sum"),
        "sglang:token_usage": ("kv_usage", "max"),
        "sglang:cache_hit_rate": ("prefix_hit_rate", "max"),
        "sglang:gen_throughput": ("gen_tokens_per_s", "sum"),
    },
    counters={"sglang:generation_tokens_total": "gen_tokens"},
    histograms={
        "sglang:time_to_first_token_seconds_bucket": "ttft",
        "sglang:e2e_request_latency_seconds_bucket": "e2e",
    },
)
map_sample = METRICS.map_sample
