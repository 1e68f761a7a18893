"""The picker's own Prometheus metrics, and its /metrics endpoint (llm-d serves one on 9090).

Decisions made through the picker count in the engine's metrics (console/placement/metrics.py)
like any other; this adds the picker's overhead, which gateway operators ask to see.
"""

from __future__ import annotations

import os
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, CollectorRegistry, Histogram, start_http_server
from prometheus_client import multiprocess as prom_multiprocess
from prometheus_client.registry import Collector

PICKER_SECONDS = Histogram(
    "locus_picker_seconds",
    "Picker time from a request's last body chunk to its answer: parsing the body, hashing "
    "the prompt, the decision and the ext_proc messages (not gRPC's own work).",
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1),
)


def serve_metrics(host: str, port: int) -> WSGIServer:
    """Serve this process's metrics (every process's, in prometheus_client's multiprocess
    mode) at http://host:port/metrics from a daemon thread."""
    registry: Collector = REGISTRY
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        registry = CollectorRegistry()
        prom_multiprocess.MultiProcessCollector(registry)
    server, _ = start_http_server(port, addr=host, registry=registry)
    return server
