"""`python -m optimizer gen-fleet` (docs/contracts.md §5): valid, attainable, deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.cli import main
from optimizer.constraints import filter_candidates
from optimizer.decide.request import placement_request
from optimizer.decision import node_view
from optimizer.estimates import estimate
from optimizer.fleetgen.demand import REFERENCE_OUTPUT_TOKENS, REFERENCE_PROMPT_TOKENS
from optimizer.fleetgen.geography import link_rtt_ms
from optimizer.topology import TIERS, Topology
from optimizer.topology_files import load_topology
from tests.optimizer.fleets import MOONCAKE

SIZES = [(1, 1), (1, 6), (2, 9), (3, 1), (7, 7), (26, 9), (60, 12), (150, 30)]


def _gen(
    tmp_path: Path, nodes: int, sites: int, seed: int, name: str = "fleet.yaml", *extra: str
) -> Path:
    out = tmp_path / name
    args = ["gen-fleet", "--nodes", str(nodes), "--sites", str(sites), "--seed", str(seed)]
    assert main([*args, *extra, "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize(("nodes", "sites"), SIZES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_it_writes_a_valid_fleet_of_the_asked_size(
    tmp_path: Path, nodes: int, sites: int, seed: int
) -> None:
    topology = load_topology(_gen(tmp_path, nodes, sites, seed))
    assert len(topology.nodes) == nodes and len(topology.sites) == sites
    assert {s.tier for s in topology.sites} <= set(TIERS)
    assert topology.sources and topology.slos and topology.workload is not None
    served = {m for n in topology.nodes for m in n.models}
    assert {m.name for m in topology.workload.models} == served
    holding = {n.site for n in topology.nodes}
    sourcing = {s.site for s in topology.sources}
    # A site holds compute or originates requests.
    assert holding | sourcing == {s.name for s in topology.sites}
    assert abs(sum(s.share for s in topology.sources) - 1.0) < 0.01


def _best_unloaded_ttft_ms(topology: Topology, source_name: str, model: str) -> float | None:
    source = topology.source_by_name[source_name]
    request = placement_request(
        topology,
        model=model,
        source_site=source.site,
        slo=source.slo,
        prompt_tokens=REFERENCE_PROMPT_TOKENS,
        max_output_tokens=REFERENCE_OUTPUT_TOKENS,
    )
    views = [node_view(topology, n.name, model) for n in topology.nodes]
    candidates, _ = filter_candidates(request, views, topology)
    if not candidates:
        return None
    return float(estimate(request, candidates, topology).ttft_s.min()) * 1000.0


@pytest.mark.parametrize(("nodes", "sites", "seed"), [(3, 5, 4), (26, 9, 5), (200, 40, 6)])
def test_every_source_can_meet_its_ttft_target_for_every_model_unloaded(
    tmp_path: Path, nodes: int, sites: int, seed: int
) -> None:
    topology = load_topology(_gen(tmp_path, nodes, sites, seed))
    for source in topology.sources:
        target = topology.slo_by_name[source.slo].ttft_p95_ms
        for model, _ in topology.model_shares():
            best = _best_unloaded_ttft_ms(topology, source.name, model)
            assert best is not None, f"{source.name} reaches no node serving {model}"
            assert best <= target / 2, (source.name, model, best, target)


def test_residency_slos_are_kept_and_met_inside_their_jurisdiction(tmp_path: Path) -> None:
    topology = load_topology(_gen(tmp_path, 300, 40, 8))
    resident = [s for s in topology.sources if topology.slo_by_name[s.slo].residency]
    assert resident, "a 40-site fleet with EU sites has residency SLOs"
    for source in resident:
        for model, _ in topology.model_shares():
            assert _best_unloaded_ttft_ms(topology, source.name, model) is not None


def test_the_same_seed_writes_the_same_file_and_another_seed_another(tmp_path: Path) -> None:
    first = _gen(tmp_path, 40, 10, 7, "a.yaml").read_bytes()
    again = _gen(tmp_path, 40, 10, 7, "b.yaml").read_bytes()
    other = _gen(tmp_path, 40, 10, 8, "c.yaml").read_bytes()
    assert first == again
    assert first != other


def test_slo_scale_tightens_the_targets_and_keeps_the_fleet_and_attainability(
    tmp_path: Path,
) -> None:
    plain = load_topology(_gen(tmp_path, 40, 10, 7, "plain.yaml"))
    tight_path = _gen(tmp_path, 40, 10, 7, "tight.yaml", "--slo-scale", "0.5")
    tight = load_topology(tight_path)
    assert "--slo-scale 0.5`" in tight_path.read_text().splitlines()[0]
    # The same nodes, links and sources: the scale takes no random draw.
    assert tight.nodes == plain.nodes and tight.links == plain.links
    assert tight.sources == plain.sources
    halved = 0
    for before, after in zip(plain.slos, tight.slos, strict=True):
        assert after.name == before.name and after.max_usd_per_1k == before.max_usd_per_1k
        for key in ("ttft_p95_ms", "e2e_p95_ms"):
            old, new = getattr(before, key), getattr(after, key)
            assert new <= old
            halved += new == old / 2
    assert halved, "some target is below its attainability floor at half its default"
    # Still attainable: the floor (twice the best unloaded) is applied after the scale.
    for source in tight.sources:
        target = tight.slo_by_name[source.slo].ttft_p95_ms
        for model, _ in tight.model_shares():
            best = _best_unloaded_ttft_ms(tight, source.name, model)
            assert best is not None and best <= target / 2


def test_rtt_grows_about_one_ms_per_100_km_of_distance() -> None:
    base = link_rtt_ms("regional", "cloud", 0.0)
    assert base == 0.5
    # 1,000 km of great circle is 1,300 km of fibre: 13 ms of round trip at 5 us/km.
    assert link_rtt_ms("regional", "cloud", 1000.0) == pytest.approx(base + 13.0)
    # Frankfurt to Ashburn (~6,550 km), as fleet-demo.yaml's 85-88 ms transatlantic links.
    assert 80 <= link_rtt_ms("regional", "cloud", 6550.0) <= 92


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "0", "--sites", "3"], "argument --nodes: expected a finite number >= 1"),
        (["--nodes", "5", "--sites", "-1"], "argument --sites: expected a finite number >= 1"),
        (["--nodes", "x", "--sites", "3"], "argument --nodes: expected a number"),
        (["--nodes", "5", "--sites", "3", "--seed", "-2"], "argument --seed"),
        (["--nodes", "5", "--sites", "3", "--slo-scale", "0"], "argument --slo-scale"),
        (["--nodes", "5", "--sites", "3", "--slo-scale", "nan"], "argument --slo-scale"),
    ],
)
def test_it_refuses_bad_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["gen-fleet", *args, "--out", str(tmp_path / "f.yaml")])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "f.yaml").exists()


def test_it_refuses_sizes_beyond_its_limits_with_an_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "f.yaml"
    assert main(["gen-fleet", "--nodes", "10", "--sites", "999999", "--out", str(out)]) == 2
    assert "error: --sites must be between 1 and 2000, got 999999" in capsys.readouterr().err
    assert not out.exists()
    args = ["gen-fleet", "--nodes", "10", "--sites", "3", "--slo-scale", "1e9", "--out", str(out)]
    assert main(args) == 2
    assert "error: --slo-scale must be between 0.05 and 20, got 1e+09" in capsys.readouterr().err
    assert not out.exists()


def test_it_names_the_file_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = blocker / "f.yaml"
    assert main(["gen-fleet", "--nodes", "3", "--sites", "2", "--out", str(out)]) == 2
    assert f"error: {out}: cannot write the topology" in capsys.readouterr().err


@pytest.mark.slow
def test_a_1000_node_60_site_fleet_loads_and_simulates(tmp_path: Path) -> None:
    fleet = _gen(tmp_path, 1000, 60, 0)
    report = tmp_path / "r.json"
    args = ["simulate", "--topology", str(fleet), "--trace", str(MOONCAKE), "--limit", "300"]
    assert main([*args, "--policy", "weighted-score", "--report", str(report)]) == 0
    result = json.loads(report.read_text())
    assert result["requests"] == 300 and result["residency_violations"] == 0
    assert result["served"] == 300
    assert result["slo_attainment"] > 0.9
