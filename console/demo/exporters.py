"""Exporter endpoints of the simulated fleet, in the formats of real exporters.

`/nodes/<name>/vllm` serves what vLLM's `/metrics` serves (rendered by
`optimizer.emulator.metrics`, as the emulated nodes' is) and `/nodes/<name>/dcgm` what
dcgm-exporter serves (one series per GPU, memory in MiB). Values are read from the
simulator's node state at scrape time; the text is rendered by prometheus_client, as the real
exporters render theirs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from console.demo.fleet import DemoFleet
from optimizer.emulator.metrics import EngineState, vllm_families

MIB = 1024 * 1024
GIB = 1024 * MIB
IDLE_WATTS, PEAK_WATTS = 60.0, 350.0


class VllmCollector(Collector):
    def __init__(self, fleet: DemoFleet, node: str) -> None:
        self.fleet, self.node = fleet, node

    def collect(self) -> Iterator[Metric]:
        state = self.fleet.node_state(self.node)
        engine = EngineState(
            model=state["model"],
            running=state["running"],
            waiting=state["waiting"],
            kv_usage=state["kv_usage"],
            counters=state["counters"],
        )
        return vllm_families([engine])


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
