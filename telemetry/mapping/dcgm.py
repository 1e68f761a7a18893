"""NVIDIA dcgm-exporter: one series per GPU (labels gpu, UUID, ...), summed or averaged per node.

Sources: https://github.com/NVIDIA/dcgm-exporter etc/default-counters.csv (units in the help
text: memory in MiB, utilisation in %, power in W) and DCGM's dcgm_structs.h for the blank
values that mean "no reading". Per-GPU series are stored as they came; the node gets:
gpu_util = mean utilisation / 100, memory used and total (= used + free + reserved) in bytes
summed over GPUs, power summed over GPUs.
"""

from __future__ import annotations

from telemetry.mapping.base import MIB, Observation, label
from telemetry.parsing import LabelSet

PREFIX = "DCGM_"
# DCGM_INT32_BLANK (0x7ffffff0) and DCGM_FP64_BLANK (2**47) plus their NOT_FOUND,
# NOT_SUPPORTED and NOT_PERMISSIONED neighbours; the int64 blanks (~9.2e18) are caught for
# every exporter by parsing.is_reading.
_INT32_BLANK = 0x7FFFFFF0
_FP64_BLANK = 140737488355328.0
BLANKS = frozenset(
    [float(_INT32_BLANK + i) for i in range(4)] + [_FP64_BLANK + i for i in range(4)]
)
_MEMORY = {
    "DCGM_FI_DEV_FB_USED": "used",
    "DCGM_FI_DEV_FB_FREE": "free",
    "DCGM_FI_DEV_FB_RESERVED": "reserved",
}


def is_blank(value: float) -> bool:
    return value in BLANKS


def map_sample(obs: Observation, name: str, labels: LabelSet, value: float) -> bool:
    gpu = label(labels, "UUID") or label(labels, "gpu")
    if name == "DCGM_FI_DEV_GPU_UTIL":
        obs.add_gauge("_gpu_util_sum", value / 100.0)
        obs.add_gauge("_gpu_util_n", 1.0)
    elif name == "DCGM_FI_DEV_POWER_USAGE":
        obs.add_gauge("power_w", value)
    elif name in _MEMORY:
        obs.add_gauge(f"_fb_{_MEMORY[name]}:{gpu}", value * MIB)
    else:
        return False
    return True


def finish(obs: Observation) -> None:
    """Fold the per-GPU parts into node values once the whole scrape is seen."""
    n = obs.gauges.pop("_gpu_util_n", 0.0)
    total_util = obs.gauges.pop("_gpu_util_sum", None)
    if n and total_util is not None:
        obs.gauges["gpu_util"] = total_util / n
    parts: dict[str, dict[str, float]] = {}
    for key in [k for k in obs.gauges if k.startswith("_fb_")]:
        kind, gpu = key[4:].split(":", 1)
        parts.setdefault(gpu, {})[kind] = obs.gauges.pop(key)
    used = [p["used"] for p in parts.values() if "used" in p]
    if used:
        obs.gauges["gpu_mem_used_bytes"] = sum(used)
    # A GPU's total is known only when used and free both read; reserved is absent on older
    # exporters (then total = used + free).
    totals = [
        p["used"] + p["free"] + p.get("reserved", 0.0)
        for p in parts.values()
        if "used" in p and "free" in p
    ]
    if totals and len(totals) == len(parts):
        obs.gauges["gpu_mem_total_bytes"] = sum(totals)
