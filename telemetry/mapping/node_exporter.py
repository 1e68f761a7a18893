"""Prometheus node_exporter: host CPU, memory and load (https://github.com/prometheus/node_exporter).

CPU utilisation is 1 - idle time / all time from `node_cpu_seconds_total{cpu, mode}`
(the usual `1 - rate(node_cpu_seconds_total{mode="idle"}[..])` averaged over CPUs).
"""

from __future__ import annotations

from telemetry.mapping.base import Observation, label, series_id
from telemetry.parsing import LabelSet

PREFIX = "node_"
_GAUGES = {
    "node_memory_MemAvailable_bytes": "mem_available_bytes",
    "node_memory_MemTotal_bytes": "mem_total_bytes",
    "node_load1": "load1",
}


def map_sample(obs: Observation, name: str, labels: LabelSet, value: float) -> bool:
    if name in _GAUGES:
        obs.add_gauge(_GAUGES[name], value)
    elif name == "node_cpu_seconds_total":
        sid = series_id(labels)
        obs.add_counter("cpu_total", sid, value)
        if label(labels, "mode") == "idle":
            obs.add_counter("cpu_idle", sid, value)
    else:
        return False
    return True
