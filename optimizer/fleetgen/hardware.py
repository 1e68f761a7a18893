"""What a generated fleet runs: nodes by tier, drawn from the catalogue fleet's accelerators,
models and list prices."""

from __future__ import annotations

from statistics import median
from typing import Any

import numpy as np

from optimizer.fleetgen.geography import Site
from optimizer.topology import Topology

# How many nodes a site of each tier draws (relative to its metro's weight), and the hardware
# a node there has: (accelerator, weight, GPU counts drawn uniformly).
NODE_SITE_WEIGHT = {"device": 0.5, "edge": 1.0, "regional": 3.0, "cloud": 4.0}
HARDWARE: dict[str, tuple[tuple[str, float, tuple[int, ...]], ...]] = {
    "device": (("jetson-orin-64", 1.0, (1,)),),
    "edge": (("l4", 0.6, (1, 1, 2)), ("l40s", 0.4, (1,))),
    "regional": (("a100-80", 0.45, (1, 1, 2, 4)), ("h100", 0.35, (1, 2, 4)), ("l40s", 0.2, (1,))),
    "cloud": (("h100", 0.6, (1, 2, 4, 8)), ("a100-80", 0.4, (1, 2, 4))),
}
LARGE_MODEL = "llama-3.1-70b"  # 131.5 GiB of bf16 weights: served on 4 or 8 big GPUs
LARGE_MODEL_PROBABILITY = 0.5
SMALL_MODELS = ("llama-3.1-8b", "qwen2.5-7b")


def nodes_per_site(rng: np.random.Generator, sites: list[Site], count: int) -> np.ndarray:
    """Nodes at each site: every site holds one when there are enough, the rest go by tier
    and metro size; with fewer nodes than sites, the core is filled first by weight."""
    weights = np.array([NODE_SITE_WEIGHT[s.tier] * s.weight for s in sites])
    p = weights / weights.sum()
    if count >= len(sites):
        return 1 + rng.multinomial(count - len(sites), p)
    chosen = rng.choice(len(sites), size=count, replace=False, p=p)
    placed = np.zeros(len(sites), dtype=np.int64)
    placed[chosen] = 1
    return placed


def draw_node(
    rng: np.random.Generator, site: Site, index: int, catalogue: Topology, price: dict[str, float]
) -> dict[str, Any]:
    options = HARDWARE[site.tier]
    weights = np.array([w for _, w, _ in options])
    accelerator, _, gpu_counts = options[int(rng.choice(len(options), p=weights / weights.sum()))]
    gpus = int(rng.choice(gpu_counts))
    memory = catalogue.accelerator_by_name[accelerator].memory_gib * gpus
    large = catalogue.model_by_name[LARGE_MODEL].memory_gib
    if (
        (LARGE_MODEL, accelerator) in catalogue.profile_by_key
        and memory - large >= 0.25 * memory
        and rng.random() < LARGE_MODEL_PROBABILITY
    ):
        models: list[str] = [LARGE_MODEL]
    else:
        models = [str(rng.choice(SMALL_MODELS))]
        both = sum(catalogue.model_by_name[m].memory_gib for m in SMALL_MODELS)
        if memory - both >= 0.25 * memory and rng.random() < 0.4:
            models = list(SMALL_MODELS)
    short = accelerator.split("-")[0] + (f"x{gpus}" if gpus > 1 else "")
    # List prices per GPU-hour vary by about +-15% between regions and providers.
    usd = price[accelerator] * gpus * float(rng.uniform(0.85, 1.15))
    if site.tier == "cloud":
        usd *= 1.1
    return {
        "name": f"{site.name}-{short}-{index}",
        "site": site.name,
        "accelerator": accelerator,
        "gpus": gpus,
        "usd_per_hour": round(usd, 3),
        "models": models,
    }


def gpu_prices(catalogue: Topology) -> dict[str, float]:
    """Median USD per GPU-hour of each accelerator in the catalogue fleet."""
    per_gpu: dict[str, list[float]] = {}
    for node in catalogue.nodes:
        per_gpu.setdefault(node.accelerator, []).append(node.usd_per_hour / node.gpus)
    return {name: median(values) for name, values in per_gpu.items()}
