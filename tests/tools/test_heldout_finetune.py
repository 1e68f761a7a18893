"""`python -m tools.heldout_finetune`: the suite's fine-tuned row, trained on the trace's rows
after those the suite replays, one `train` output per fleet and seed, resumable."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.heldout.tuned import fine_tuned_policies
from tools.heldout_finetune import TRACE, main, tail_trace


def test_the_tail_trace_leaves_out_the_rows_the_suite_replays(tmp_path: Path) -> None:
    source = tmp_path / "t.csv"
    source.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\na,1,2\nb,3,4\nc,5,6\n")
    out = tail_trace(source, 2, tmp_path / "tail" / "t.csv")
    assert out.read_text() == "TIMESTAMP,ContextTokens,GeneratedTokens\nc,5,6\n"
    with pytest.raises(ValueError, match="none after the first 3"):
        tail_trace(source, 3, tmp_path / "x.csv")
    shipped = TRACE.read_text().splitlines()
    tail = tail_trace(TRACE, 4000, tmp_path / "azure.csv").read_text().splitlines()
    assert tail[0] == shipped[0] and tail[1:] == shipped[4001:]
    assert not set(tail[1:]) & set(shipped[1:4001])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fleets", "nowhere"], "--fleets: unknown nowhere"),
        (["--seeds", ","], "--seeds: give at least one seed"),
        (["--timesteps", "0"], "--timesteps"),
        (["--out", "a\x00b"], "--out"),
    ],
)
def test_bad_options_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--out", str(tmp_path / "o"), *args])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
@pytest.mark.timeout(15 * 60)  # a real fine-tune: its validation replays every heuristic
def test_it_writes_the_layout_the_suite_judges_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--out", str(tmp_path), "--fleets", "retail-edge", "--seeds", "0"]
    argv += ["--timesteps", "256", "--validate-every", "256", "--parallel", "1"]
    assert main(argv) == 0
    assert "retail-edge seed 0: exit 0" in capsys.readouterr().out
    found, problems = fine_tuned_policies(tmp_path, ["retail-edge"], [0])
    assert problems == [] and found == {"retail-edge": {0: str(tmp_path / "retail-edge/seed-0")}}
    scorer = tmp_path / "retail-edge" / "seed-0" / "scorer.pt"
    before = scorer.stat().st_mtime_ns
    assert main(argv) == 0  # written already: kept, not trained again
    assert capsys.readouterr().out == "" and scorer.stat().st_mtime_ns == before
