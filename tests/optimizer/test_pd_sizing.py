"""DistServe-style pool sizing (optimizer.pd_sizing, tools/pd_size.py; issue #30)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from optimizer.capacity import FleetCapacity, TokenMix
from optimizer.pd_sizing import by_jurisdiction, phase_work, size_pools
from optimizer.topology_entries import GIB
from optimizer.topology_files import load_topology
from tools import pd_size

REPO = Path(__file__).resolve().parents[2]
PD = REPO / "optimizer" / "topologies" / "pd-two-regions.yaml"
SIZED = REPO / "optimizer" / "topologies" / "pd-two-regions-sized.yaml"
MIX = TokenMix(prompt_tokens=15_000.0, output_tokens=150.0, requests_per_s=1.0)


def test_phase_work_follows_the_serving_model_by_hand() -> None:
    topology = load_topology(PD)
    work = phase_work(topology, "llama-3.1-8b", "h100", MIX)
    # h100: 80 GiB less 15 GiB of weights over 131,072 bytes a token, 15,150 tokens a sequence.
    batch = math.floor(65 * GIB / 131_072 / 15_150)
    assert work.decode_batch == batch == 35
    assert work.prefill_gpu_s == pytest.approx(15_000 / 18_000)
    assert work.decode_gpu_s == pytest.approx(150 * (9 + 0.12 * batch) / 1000 / batch)
    assert work.decode_share == pytest.approx(
        work.decode_gpu_s / (work.prefill_gpu_s + work.decode_gpu_s)
    )


def test_decode_batch_is_capped_by_max_batch_for_short_sequences() -> None:
    topology = load_topology(PD)
    short = TokenMix(prompt_tokens=100.0, output_tokens=100.0, requests_per_s=1.0)
    assert phase_work(topology, "llama-3.1-8b", "h100", short).decode_batch == 128


def test_a_one_gpu_node_spends_what_capacity_counts() -> None:
    """One request's prefill plus decode seconds on a one-GPU node is one over its rate in
    optimizer.capacity, so the two never disagree on the serving model."""
    topology = load_topology(PD)
    rates = FleetCapacity(topology).node_rates(MIX.prompt_tokens, MIX.output_tokens)
    names = [n.name for n in topology.nodes]
    for node, accelerator in (("fra-p1", "h100"), ("muc-m1", "l4")):
        work = phase_work(topology, "llama-3.1-8b", accelerator, MIX)
        rate = rates[names.index(node), 0]
        assert work.prefill_gpu_s + work.decode_gpu_s == pytest.approx(1 / rate)


def test_pools_are_the_decode_share_of_each_group_rounded_up() -> None:
    topology = load_topology(PD)
    pools = size_pools(topology, "llama-3.1-8b", MIX, by_jurisdiction(topology))
    assert [(p.group, p.accelerator, p.gpus) for p in pools] == [
        ("EU", "h100", 10), ("EU", "l4", 6), ("US", "h100", 10), ("US", "l4", 6)
    ]  # fmt: skip
    for p in pools:
        assert p.decode_gpus == math.ceil(p.gpus * p.work.decode_share)
    whole = size_pools(topology, "llama-3.1-8b", MIX)
    assert [(p.group, p.gpus) for p in whole] == [("fleet", 20), ("fleet", 12)]


def test_decode_heavy_work_makes_a_decode_heavy_pool() -> None:
    topology = load_topology(PD)
    chat = TokenMix(prompt_tokens=200.0, output_tokens=2_000.0, requests_per_s=1.0)
    (h100,) = [p for p in size_pools(topology, "llama-3.1-8b", chat) if p.accelerator == "h100"]
    assert h100.work.pd_ratio < 1
    assert h100.decode_gpus > h100.gpus // 2


def test_cli_prints_the_sizing_the_sized_fleet_cites(capsys: pytest.CaptureFixture[str]) -> None:
    pd_size.main(["--fleet", str(PD), "--limit", "2000"])
    out = capsys.readouterr().out.splitlines()
    header = SIZED.read_text(encoding="utf-8")
    assert out[0] == "mean prompt 12,366 tokens, mean output 191.5 tokens"
    assert out[0] in header
    assert "decode share 8.52% -> 1 decode GPUs" in out[1]
    assert "decode share 24.84% -> 2 decode GPUs" in out[2]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--fleet", "/nonexistent.yaml"], "cannot read file"),
        (["--limit", "0"], "must be at least 1"),
        (["--model", "no-such-model"], "is not served by"),
    ],
)
def test_cli_answers_bad_input_with_a_clear_error(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        pd_size.main(["--fleet", str(PD), *argv] if argv[0] != "--fleet" else argv)
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def test_the_sized_fleet_is_the_same_hardware_with_the_sized_roles() -> None:
    pd, sized = load_topology(PD), load_topology(SIZED)
    strip = lambda t: [(n.name, n.site, n.accelerator, n.gpus, n.usd_per_hour) for n in t.nodes]  # noqa: E731
    assert strip(pd) == strip(sized)
    assert (pd.sites, pd.links, pd.sources, pd.slos) == (
        sized.sites,
        sized.links,
        sized.sources,
        sized.slos,
    )
    for pool in size_pools(pd, "llama-3.1-8b", TokenMix(12_366.0, 191.5, 1.0), by_jurisdiction(pd)):
        decode = sum(
            n.gpus for n in sized.nodes
            if n.accelerator == pool.accelerator and n.role == "decode"
            and sized.site_by_name[n.site].jurisdiction == pool.group
        )  # fmt: skip
        assert decode == pool.decode_gpus
