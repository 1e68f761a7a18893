"""The emulated fleet (`python -m optimizer serve-fleet`) and what the harness asks of it.

One fresh fleet per router run, so no router inherits another's queues or prefix caches. The
fleet prints `NAME URL` per node, then `serve-fleet: N nodes ready`. Requests without an
`x-locus-source` header come from the fleet's `--source`; the harness picks the source whose
site reaches the most nodes, so a router that drops the header (sglang-router) reaches as many
nodes as it can, and corrects its network time afterwards (`report.network_s`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import requests
from prometheus_client.parser import text_string_to_metric_families

from optimizer.topology import Topology

READY_LINE = "nodes ready"
# An unknown source name: a node that sees it answers 400, a node that does not answers 200.
PROBE_SOURCE = "locus-bench-no-such-source"


def default_source(topology: Topology) -> str | None:
    """The source whose site has a route to the most nodes (the first on ties)."""
    if not topology.sources:
        return None
    reach = {
        s.name: sum((s.site, n.site) in topology.routes for n in topology.nodes)
        for s in topology.sources
    }
    return max(topology.sources, key=lambda s: reach[s.name]).name


@dataclass
class Fleet:
    process: subprocess.Popen[str]
    urls: dict[str, str]
    source: str | None

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def start_fleet(
    topology_file: Path, topology: Topology, port_base: int, python: str, log: Path
) -> Fleet:
    source = default_source(topology)
    argv = [python, "-m", "optimizer", "serve-fleet", "--topology", str(topology_file)]
    argv += ["--port-base", str(port_base)] + (["--source", source] if source else [])
    # Run from the log's directory: `-m optimizer` must import the fleet Python's own tree
    # (its venv's path file), not a package that happens to sit in the current directory.
    with log.open("a") as err:
        process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            cwd=log.parent,
            start_new_session=True,
        )
    assert process.stdout is not None
    urls: dict[str, str] = {}
    for line in process.stdout:
        if READY_LINE in line:
            break
        name, _, url = line.strip().partition(" ")
        if url.startswith("http"):
            urls[name] = url
    else:
        raise RuntimeError(f"serve-fleet exited ({process.wait()}); see {log}")
    return Fleet(process, urls, source)


def workers_by_model(topology: Topology, urls: Mapping[str, str]) -> dict[str, list[str]]:
    """Each model's worker URLs (a node serving two models is a worker of both)."""
    out: dict[str, list[str]] = {}
    for node in topology.nodes:
        for model in node.models:
            out.setdefault(model, []).append(urls[node.name])
    return out


def _tiny(
    url: str, model: str, api_key: str, headers: Mapping[str, str] | None = None
) -> requests.Response:
    body = {"model": model, "prompt": "ready " * 4, "max_tokens": 1}
    # The key clients send as their OpenAI API key (Locus's router checks it).
    sent = {"Authorization": f"Bearer {api_key}", **(headers or {})}
    return requests.post(f"{url}/v1/completions", json=body, headers=sent, timeout=10)


def wait_ready(urls: Mapping[str, str], api_key: str, timeout_s: float = 90.0) -> None:
    """Until one tiny request per model through the router is answered 200."""
    deadline = time.monotonic() + timeout_s
    for model, url in urls.items():
        while True:
            try:
                if _tiny(url, model, api_key).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"router for {model} at {url} not ready in {timeout_s:.0f} s")
            time.sleep(0.5)


def forwards_source(urls: Mapping[str, str], api_key: str) -> bool:
    """Whether the router passes `x-locus-source` on to the node (see PROBE_SOURCE); Locus's
    router reads it itself, and refuses a source its inventory does not have with 400 too."""
    model, url = next(iter(urls.items()))
    return _tiny(url, model, api_key, {"x-locus-source": PROBE_SOURCE}).status_code == 400


def prefill_tokens(urls: Mapping[str, str]) -> dict[tuple[str, str], tuple[float, float]]:
    """(node, model) -> (prompt tokens, prefix-cache hit tokens) from each node's vLLM
    `/metrics` counters."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for node, url in urls.items():
        text = requests.get(f"{url}/metrics", timeout=10).text
        counts: dict[str, dict[str, float]] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in ("vllm:prompt_tokens_total", "vllm:prefix_cache_hits_total"):
                    model = sample.labels.get("model_name", "")
                    counts.setdefault(model, {})[sample.name] = sample.value
        for model, c in counts.items():
            out[(node, model)] = (
                c.get("vllm:prompt_tokens_total", 0.0),
                c.get("vllm:prefix_cache_hits_total", 0.0),
            )
    return out


def tree_cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of processes and their descendants (proc(5): /proc/PID/stat
    fields 14 and 15, in clock ticks)."""
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stats[int(entry.name)] = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
    tree = set(pids)
    for _ in range(4):
        tree |= {p for p, f in stats.items() if int(f[1]) in tree}
    ticks = sum(int(stats[p][11]) + int(stats[p][12]) for p in tree if p in stats)
    return ticks / os.sysconf("SC_CLK_TCK")


def python_for_fleet() -> str:
    return os.environ.get("BENCH_FLEET_PYTHON", sys.executable)
