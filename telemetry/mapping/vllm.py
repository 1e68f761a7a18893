"""vLLM's Prometheus metrics (v1 engine names, with the deprecated v0 ones as fallbacks).

Source: https://docs.vllm.ai/en/latest/design/metrics.html and vllm/v1/metrics/loggers.py.
One vLLM server may expose several engines or models (labels `engine`, `model_name`): request
counts add up, KV usage takes the fullest engine (the one that refuses work first).
"""

from __future__ import annotations

from telemetry.mapping.base import EngineMetrics

PREFIX = "vllm:"
METRICS = EngineMetrics(
    gauges={
        "vllm:num_requests_waiting": ("queue_depth", "sum"),
        "vllm:num_requests_running": ("running", "sum"),
        "vllm:kv_cache_usage_perc": ("kv_usage", "max"),  # a fraction 0..1 despite the name
        "vllm:gpu_prefix_cache_hit_rate": ("prefix_hit_rate", "max"),  # v0 engine
        "vllm:avg_generation_throughput_toks_per_s": ("gen_tokens_per_s", "sum"),  # v0 engine
    },
    counters={
        "vllm:generation_tokens_total": "gen_tokens",
        "vllm:prefix_cache_hits_total": "prefix_hits",  # counted in tokens
        "vllm:prefix_cache_queries_total": "prefix_queries",
    },
    histograms={
        "vllm:time_to_first_token_seconds_bucket": "ttft",
        "vllm:e2e_request_latency_seconds_bucket": "e2e",
    },
    fallback_gauges={"vllm:gpu_cache_usage_perc": ("kv_usage", "max")},  # v0 name
)
map_sample = METRICS.map_sample
