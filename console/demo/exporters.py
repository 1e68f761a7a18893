"""Exporter endpoints of the simulated fleet, in the formats of real exporters.

`/nodes/<name>/vllm` serves what vLLM's `/metrics` serves (v1 names: `vllm:num_requests_*`,
`vllm:kv_cache_usage_perc`, prefix-cache counters in tokens, the TTFT histogram with vLLM's
buckets) and `/nodes/<name>/dcgm` what dcgm-exporter serves (one series per GPU, memory in
MiB). Values are read from the simulator's node state at scrape time; the text is rendered by
prometheus_client, as the real exporters render theirs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from console.demo.fleet import TTFT_BUCKETS, DemoFleet, NodeCounters

MIB = 1024 * 1024
GIB = 1024 * MIB
IDLE_WATTS, PEAK_WATTS = 60.0, 350.0


class VllmCollector(Collector):
    def __init__(self, fleet: DemoFleet, node: str) -> None:
        self.fleet, self.node = fleet, node

    def collect(self) -> Iterator[Metric]:
        state = self.fleet.node_state(self.node)
        counters: NodeCounters = state["counters"]
        labels = ["model_name"]
        model = [state["model"]]
        for name, doc, value in (
            (
                "vllm:num_requests_running",
                "Number of requests in model execution batches.",
                state["running"],
            ),
            (
                "vllm:num_requests_waiting",
                "Number of requests waiting to be processed.",
                state["waiting"],
            ),
            (
                "vllm:kv_cache_usage_perc",
                "KV-cache usage. 1 means 100 percent usage.",
                state["kv_usage"],
            ),
        ):
            gauge = GaugeMetricFamily(name, doc, labels=labels)
            gauge.add_metric(model, value)
            yield gauge
        for name, doc, value in (
            (
                "vllm:prefix_cache_queries",
                "Prefix cache queries, in tokens.",
                counters.prompt_tokens,
            ),
            ("vllm:prefix_cache_hits", "Prefix cache hits, in tokens.", counters.cached_tokens),
            (
                "vllm:generation_tokens",
                "Number of generation tokens processed.",
                counters.generated_tokens,
            ),
            (
                "vllm:request_success",
                "Count of successfully processed requests.",
                counters.finished,
            ),
        ):
            counter = CounterMetricFamily(name, doc, labels=labels)
            counter.add_metric(model, value)
            yield counter
        histogram = HistogramMetricFamily(
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            labels=labels,
        )
        cumulative, buckets = 0, []
        for bound, count in zip(TTFT_BUCKETS, counters.ttft_buckets, strict=True):
            cumulative += count
            buckets.append((repr(bound), cumulative))
        buckets.append(("+Inf", counters.ttft_count))
        histogram.add_metric(model, buckets, counters.ttft_sum)
        yield histogram


class DcgmCollector(Collector):
    def __init__(self, fleet: DemoFleet, node: str) -> None:
        self.fleet, self.node = fleet, node

    def collect(self) -> Iterator[Metric]:
        state = self.fleet.node_state(self.node)
        gpus = state["gpus"]
        labels = ["gpu", "UUID", "device", "modelName", "Hostname"]
        util = GaugeMetricFamily("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", labels=labels)
        used = GaugeMetricFamily(
            "DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", labels=labels
        )
        free = GaugeMetricFamily(
            "DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", labels=labels
        )
        power = GaugeMetricFamily("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", labels=labels)
        total_mib = state["memory_bytes_per_gpu"] / MIB
        used_mib = min(total_mib, state["used_bytes"] / gpus / MIB)
        for gpu in range(gpus):
            values = [
                str(gpu),
                f"GPU-{self.node}-{gpu}",
                f"nvidia{gpu}",
                state["accelerator"],
                self.node,
            ]
            util.add_metric(values, round(state["busy"] * 100.0, 1))
            used.add_metric(values, round(used_mib))
            free.add_metric(values, round(total_mib - used_mib))
            power.add_metric(values, IDLE_WATTS + (PEAK_WATTS - IDLE_WATTS) * state["busy"])
        yield from (util, used, free, power)


def serve(fleet: DemoFleet, port: int) -> ThreadingHTTPServer:
    """Start the exporter endpoints on 127.0.0.1:`port` in a daemon thread."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            parts = self.path.strip("/").split("/")
            if len(parts) != 3 or parts[0] != "nodes" or parts[1] not in fleet.node_names:
                self.send_error(404, "unknown node or exporter")
                return
            collector: Any = {"vllm": VllmCollector, "dcgm": DcgmCollector}.get(parts[2])
            if collector is None:
                self.send_error(404, "exporters: vllm, dcgm")
                return
            registry = CollectorRegistry(auto_describe=False)
            registry.register(collector(fleet, parts[1]))
            body = generate_latest(registry)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, name="demo-exporters", daemon=True).start()
    return server
