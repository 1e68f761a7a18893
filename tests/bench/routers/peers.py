"""The routers the benchmark puts in front of the emulated fleet, each one entry.

A `RouterSpec` is a name (the report's row), and how to start it given the fleet's worker URLs
per model and the fleet itself (topology file, node URLs, default source: `FleetTarget`);
`start` returns a `RunningRouter`: the URL clients send each model's requests to, and the
processes to measure and stop. Locus's own router slots in as one more spec (`locus-<policy>`,
started with `manage.py run_router`, one URL for every model: `locus.py`).

What was found running the peers against vLLM-format endpoints (sglang-router 0.3.2,
vllm-router 0.1.17; the report's notes repeat it):

- Both route one model's workers. Their multi-model gateway mode (`--enable-igw`) does not
  start offline here (sglang-router panics downloading its Harmony tokenizer vocabulary;
  vllm-router's starts with no workers and needs each added through its `/workers` API), so
  a fleet serving several models gets one router process per model, the deployment the
  routers' own docs describe ("a router serves one model"); a node serving two models is a
  worker of both. Clients pick the model's URL, as they pick a model.
- sglang-router forwards only whitelisted request headers (authorization, x-request-id,
  x-correlation-id, traceparent, tracestate, x-smg-routing-key: `should_forward_request_header`
  in sgl-model-gateway/src/routers/header_utils.rs), so `x-locus-source` never reaches the
  node; the harness detects this at start (`source_header_forwarded`, see `fleet.py`).
- sglang-router's `power_of_two` compares SGLang's `/get_load` token loads, which vLLM-format
  endpoints do not serve; it then compares its own in-flight request counts.
- vllm-router's `cache_aware` and `kv_aware` tokenize each request by calling every worker's
  `/v1/completions/render` (then `/tokenize`); without them they record `missing_tokens` and
  fall back to the least-loaded worker. `kv_aware` also needs vLLM's KV events (ZMQ,
  `/kv_event_sources`); without them it scores no prefix and picks the least-loaded worker.
- Plain round-robin is sglang-router's `round_robin` policy.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Quiet logs (their INFO lines per request would cost CPU the benchmark measures); retries,
# circuit breakers and health checks keep the defaults people run.
# The workers are up before the router starts: check them every second, not every 30.
_SGLANG_FLAGS = ("--log-level", "warn", "--worker-startup-check-interval", "1")
_VLLM_FLAGS = ("--log-level", "warning", "--worker-startup-check-interval", "1")


@dataclass
class RunningRouter:
    """A started router: the URL per model clients use, the key they send as their OpenAI API
    key (Locus's router wants a service key; the peers take any), and its processes."""

    urls: dict[str, str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    api_key: str = "bench"

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM each process group, then SIGKILL what is left after `timeout_s`."""
        for p in self.processes:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.processes:
            try:
                p.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


@dataclass(frozen=True)
class FleetTarget:
    """The emulated fleet a router is put in front of: what Locus's rows load into their
    inventory (the peers need only the worker URLs)."""

    topology_file: Path
    urls: Mapping[str, str]  # node name -> base URL
    source: str | None  # the fleet's default source


# start(workers by model, first free port, log directory, the fleet) -> RunningRouter
Starter = Callable[[Mapping[str, Sequence[str]], int, Path, FleetTarget], RunningRouter]


@dataclass(frozen=True)
class RouterSpec:
    """One row of the report: its name, how to start it, and what the reader should know."""

    name: str
    start: Starter
    note: str = ""
    ports_needed: int = 8


def spawn(
    argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        # A process group of its own, so stopping it stops whatever it forked.
        return subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=None if env is None else dict(env),
        )


def _per_model(binary: str, argv: Callable[[Sequence[str], int, int], list[str]]) -> Starter:
    """A starter running one `binary` process per model, on consecutive ports."""

    def start(
        workers: Mapping[str, Sequence[str]], port: int, logs: Path, fleet: FleetTarget
    ) -> RunningRouter:
        running = RunningRouter(urls={})
        for k, (model, urls) in enumerate(sorted(workers.items())):
            http, metrics = port + 2 * k, port + 2 * k + 1
            log = logs / f"{Path(binary).name}-{k}.log"
            running.processes.append(spawn([binary, *argv(urls, http, metrics)], log))
            running.urls[model] = f"http://127.0.0.1:{http}"
        return running

    return start


def sglang(bench_bin: Path, policy: str) -> Starter:
    def argv(urls: Sequence[str], port: int, metrics: int) -> list[str]:
        return [
            "launch",
            "--host", "127.0.0.1", "--port", str(port),
            "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics),
            "--policy", policy, *_SGLANG_FLAGS,
            "--worker-urls", *urls,
        ]  # fmt: skip

    return _per_model(str(bench_bin / "sglang-router"), argv)


def vllm(bench_bin: Path, policy: str) -> Starter:
    def argv(urls: Sequence[str], port: int, metrics: int) -> list[str]:
        return [
            "--host", "127.0.0.1", "--port", str(port),
            "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics),
            "--policy", policy, *_VLLM_FLAGS,
            "--worker-urls", *urls,
        ]  # fmt: skip

    return _per_model(str(bench_bin / "vllm-router"), argv)


def peer_routers(bench_bin: Path) -> list[RouterSpec]:
    """The peer rows, in report order."""
    return [
        RouterSpec("sglang-cache_aware", sglang(bench_bin, "cache_aware")),
        RouterSpec(
            "sglang-power_of_two",
            sglang(bench_bin, "power_of_two"),
            "compares its own in-flight counts (no SGLang /get_load on vLLM-format nodes)",
        ),
        RouterSpec(
            "vllm-cache_aware",
            vllm(bench_bin, "cache_aware"),
            "needs the workers' /v1/completions/render or /tokenize for token ids; without "
            "them it falls back to least-loaded",
        ),
        RouterSpec(
            "vllm-kv_aware",
            vllm(bench_bin, "kv_aware"),
            "no vLLM KV events from emulated nodes: scores no prefix, picks least-loaded",
        ),
        RouterSpec("round-robin", sglang(bench_bin, "round_robin"), "sglang-router round_robin"),
    ]
