"""Shares are finite and bounded (docs/contracts.md §1, docs/hardening.md): a topology file
with a share no sum of shares can hold is refused naming its line, and a draw over the largest
shares still gives every request a source and a model."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.arrivals import draw_requests
from optimizer.cli import main
from optimizer.topology import MAX_SHARE
from optimizer.topology_files import load_topology
from optimizer.traces import load_trace
from tests.conftest import CONTRACT_EXAMPLE, TRACES


def test_simulate_refuses_a_topology_with_an_unbounded_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        CONTRACT_EXAMPLE.read_text().replace("share: 0.3", "share: 1.7e308"), encoding="utf-8"
    )
    code = main(
        [
            "simulate",
            "--topology",
            str(fleet),
            "--trace",
            str(TRACES / "mooncake_synthetic.jsonl"),
            "--policy",
            "random",
            "--limit",
            "10",
            "--report",
            str(tmp_path / "out.json"),
        ]
    )
    assert code != 0
    error = capsys.readouterr().err
    assert f"{fleet}:29:" in error and "share" in error
    assert f"{MAX_SHARE:g}" in error or "1000000" in error


def test_a_draw_over_shares_at_the_bound_gives_every_source_its_part() -> None:
    topology = load_topology(CONTRACT_EXAMPLE)
    at_bound = topology.model_copy(
        update={"sources": tuple(s.model_copy(update={"share": 1e308}) for s in topology.sources)}
    )
    trace = load_trace(TRACES / "mooncake_synthetic.jsonl")[:400]
    drawn = [r.source for r in draw_requests(trace, at_bound, seed=0)]
    assert set(drawn) == {s.name for s in topology.sources}
    assert 0.4 < drawn.count("munich-app") / len(drawn) < 0.6  # 1:1, not 0.7:0.3
