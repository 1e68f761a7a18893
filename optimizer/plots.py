"""Evaluation plots written beside the JSON report (matplotlib, headless Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display on servers and in CI; must precede pyplot's import

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def plot_paths(report_path: Path) -> tuple[Path, Path]:
    """Where the plots of a report go: `<stem>-ttft-cdf.png` and `<stem>-slo-cost.png`."""
    stem = report_path.with_suffix("")
    return (
        stem.with_name(stem.name + "-ttft-cdf.png"),
        stem.with_name(stem.name + "-slo-cost.png"),
    )


def write_plots(
    report_path: Path,
    ttft_s: dict[str, np.ndarray],
    policies: dict[str, dict[str, Any]],
    oracle: dict[str, Any],
    title: str,
) -> tuple[Path, Path]:
    """Draw the TTFT CDF per policy, and SLO attainment and cost per 1k per policy."""
    cdf_path, bars_path = plot_paths(report_path)

    fig, ax = plt.subplots(figsize=(8, 5))
    for name, values in ttft_s.items():
        if values.size:
            ordered = np.sort(values)
            ax.plot(ordered, np.arange(1, ordered.size + 1) / ordered.size, label=name)
    ax.axvline(
        oracle["ttft_ms"]["mean"] / 1000.0, color="black", linestyle=":", label="oracle mean"
    )
    ax.set_xscale("log")
    ax.set_xlabel("time to first token (s, log scale)")
    ax.set_ylabel("fraction of served requests")
    ax.set_title(f"TTFT CDF — {title}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(cdf_path, dpi=110)
    plt.close(fig)

    names = list(policies)
    x = np.arange(len(names))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    left.bar(x, [policies[n]["slo_attainment"] * 100 for n in names], color="tab:blue")
    left.axhline(oracle["slo_attainment"] * 100, color="black", linestyle=":", label="oracle")
    left.set_ylabel("SLO attainment (%)")
    left.set_ylim(0, 100)
    left.legend(fontsize=8)
    right.bar(x, [policies[n]["cost_per_1k_requests"] for n in names], color="tab:orange")
    right.set_ylabel("cost per 1k requests (USD)")
    for axis in (left, right):
        axis.set_xticks(x, names, rotation=35, ha="right", fontsize=8)
        axis.grid(True, axis="y", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(bars_path, dpi=110)
    plt.close(fig)
    return cdf_path, bars_path
