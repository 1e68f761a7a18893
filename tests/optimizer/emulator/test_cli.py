"""`python -m optimizer serve-fleet`: starts, serves every node, stops cleanly on a signal."""

from __future__ import annotations

import copy
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from optimizer.observations import load_observations
from optimizer.topology import Topology
from tests.optimizer.fleets import PD_NODES, REPO, TINY, pd_topology

PORT_BASE = 20450  # this worktree's range (20400-20499)


def _write(tmp_path: Path, name: str, data: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return str(path)


@contextmanager
def _serve(*args: str) -> Iterator[tuple[subprocess.Popen[str], dict[str, str]]]:
    proc = subprocess.Popen(  # noqa: S603 - this interpreter, fixed arguments
        [sys.executable, "-m", "optimizer", "serve-fleet", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        urls: dict[str, str] = {}
        for line in proc.stdout:
            if line.startswith("serve-fleet:"):
                assert "ready" in line
                break
            name, url = line.split()
            urls[name] = url
        yield proc, urls
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def _complete(url: str) -> dict[str, Any]:
    body = {"model": "m1", "prompt": "ping " * 20, "max_tokens": 2}
    response = requests.post(url + "/v1/completions", json=body, timeout=10)
    assert response.status_code == 200
    return dict(response.json())


def test_it_serves_every_node_and_stops_cleanly_on_sigint(tmp_path: Path) -> None:
    topology = _write(tmp_path, "t.yaml", TINY)
    with _serve("--topology", topology, "--port-base", "0") as (proc, urls):
        assert list(urls) == [n["name"] for n in TINY["nodes"]]
        for url in urls.values():
            assert _complete(url)["usage"]["completion_tokens"] == 2
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
        assert "serve-fleet: stopped" in out


def test_nodes_listen_from_the_port_base_in_file_order_and_stop_on_sigterm(
    tmp_path: Path,
) -> None:
    topology = _write(tmp_path, "t.yaml", TINY)
    with _serve("--topology", topology, "--port-base", str(PORT_BASE)) as (proc, urls):
        assert list(urls.values()) == [f"http://127.0.0.1:{PORT_BASE + i}" for i in range(4)]
        # A stream still open when the signal comes is cut, and the exit is still clean.
        body = {"model": "m1", "prompt": "x" * 40, "max_tokens": 10_000, "stream": True}
        url = urls["edge-s"] + "/v1/completions"
        with requests.post(url, json=body, stream=True, timeout=10) as open_:
            assert next(open_.iter_lines()).startswith(b"data: ")
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
        assert "serve-fleet: stopped" in out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_nodes_listen_at_their_address_and_log_observations(tmp_path: Path) -> None:
    data = copy.deepcopy(TINY)
    ports = [_free_port() for _ in data["nodes"]]
    for node, port in zip(data["nodes"], ports, strict=True):
        node["address"] = f"127.0.0.1:{port}"
    topology = _write(tmp_path, "t.yaml", data)
    out = tmp_path / "observations.jsonl"
    with _serve("--topology", topology, "--requests-out", str(out)) as (proc, urls):
        assert list(urls.values()) == [f"http://127.0.0.1:{p}" for p in ports]
        _complete(urls["core-l"])
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=10)
    [record] = [yaml.safe_load(line) for line in out.read_text().splitlines()]
    assert record["node"] == "core-l" and record["source"] == "app" and record["ok"] is True
    assert record["input_length"] == 25 and record["output_length"] == 2
    # 10 ms of RTT, 25 tokens at 10k/s, one decode step of 11 ms.
    assert record["ttft_ms"] == pytest.approx(10 + 2.5, abs=0.1)
    assert record["e2e_ms"] == pytest.approx(10 + 2.5 + 11, abs=0.1)


def _post(url: str, letter: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    """A completion of a 1,000-token prompt of `letter`s: each request its own letter, so
    none finds another's blocks in a prefix cache."""
    base = {"model": "m1", "prompt": letter * 4000, "max_tokens": 3}
    response = requests.post(
        url + "/v1/completions", json={**base, **body}, headers=headers, timeout=20
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


def _split_lower_bound_ms(topology: Topology) -> float:
    """What any split of a 1,000-token prompt from the edge, prefilled on core-p and decoded
    on edge-d, takes at least before its first token: half the edge-core RTT to the prefill
    node, its prefill (1,000 tokens at 10k/s), and its KV to the edge (the link's RTT, 1 MB
    at 1 Gb/s)."""
    link = topology.link("a-edge", "b-core")
    assert link is not None
    return link.rtt_ms / 2 + 100.0 + link.rtt_ms + 1e6 * 8 / (link.bandwidth_gbps * 1e9) * 1e3


def test_a_split_request_logs_one_observation_naming_its_prefill_node(tmp_path: Path) -> None:
    """The router's two calls (prefill with `do_remote_decode`, then decode with the prefill's
    `kv_transfer_params`) and llm-d's sidecar header each log one line, as `simulate
    --requests-out` does for a split request: `node` the decode node, `prefill_node` the
    prefill node, times from the prompt's arrival at the prefill node."""
    data = {**copy.deepcopy(TINY), "nodes": copy.deepcopy(PD_NODES)}
    data["models"] = [{"name": "m1", "memory_gib": 16, "kv_bytes_per_token": 1000}]
    topology = _write(tmp_path, "pd.yaml", data)
    out = tmp_path / "observations.jsonl"
    with _serve("--topology", topology, "--port-base", "0", "--requests-out", str(out)) as (
        proc,
        urls,
    ):
        prefill = _post(
            urls["core-p"], "a", {"max_tokens": 1, "kv_transfer_params": {"do_remote_decode": True}}
        )
        _post(urls["edge-d"], "a", {"kv_transfer_params": prefill["kv_transfer_params"]})
        prefiller = urls["core-p"].removeprefix("http://")
        _post(urls["edge-d"], "b", {}, **{"x-prefiller-host-port": prefiller})
        _post(urls["edge-m"], "c", {})
        # A decode whose prefill this fleet did not hand off (no hand-off id): its pair is
        # known, its arrival and so its latencies are not.
        foreign = {k: v for k, v in prefill["kv_transfer_params"].items() if k.startswith("remote")}
        _post(urls["edge-d"], "d", {"kv_transfer_params": foreign})
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=10)
    lines = [yaml.safe_load(line) for line in out.read_text().splitlines()]
    assert [(r["node"], r.get("prefill_node")) for r in lines] == [
        ("edge-d", "core-p"),
        ("edge-d", "core-p"),
        ("edge-m", None),
        ("edge-d", "core-p"),
    ]
    fleet = pd_topology()
    floor = _split_lower_bound_ms(fleet)
    for record in lines[:2]:
        assert record["ok"] is True and record["output_length"] == 3
        assert record["input_length"] == 1000 and record["source"] == "app"
        assert floor <= record["ttft_ms"] <= record["e2e_ms"]
    assert "prefill_node" not in lines[2] and lines[2]["ok"] is True
    assert lines[3]["ok"] is False and lines[3]["ttft_ms"] is None
    # The calibration's reader takes the file as it takes the simulator's.
    loaded = load_observations(out, fleet)
    assert sorted(p or "" for p in loaded.prefill_node) == ["", "core-p", "core-p", "core-p"]


def _fails(*args: str) -> str:
    done = subprocess.run(  # noqa: S603 - this interpreter, fixed arguments
        [sys.executable, "-m", "optimizer", "serve-fleet", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    return done.stderr


def test_bad_setups_exit_2_with_a_clear_error(tmp_path: Path) -> None:
    topology = _write(tmp_path, "t.yaml", TINY)
    assert "without an address" in _fails("--topology", topology)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        assert "cannot listen" in _fails("--topology", topology, "--port-base", port)
