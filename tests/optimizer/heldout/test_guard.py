"""Training never sees the held-out suite: `train` refuses its fleets by place and by content,
and lets one through only as the suite's own fine-tune. Nor the validation fleets candidates
are chosen on, with no exception."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from optimizer.cli import main
from optimizer.errors import InputFileError
from optimizer.heldout.guard import (
    fingerprint,
    heldout_files,
    heldout_match,
    refuse_heldout,
    validation_files,
    validation_match,
)
from optimizer.topology_files import load_topology
from tests.conftest import TOPOLOGIES

TRACE = "optimizer/data/traces/azure_llm_2023_conv.csv"
FLEET = heldout_files()[0]


def _disguised(tmp_path: Path, fleet: Path = FLEET) -> Path:
    """A held-out fleet under another name, nodes reordered and re-priced, speeds changed (a
    calibrated copy), as a dump of the console's inventory would bring it."""
    data = yaml.safe_load(fleet.read_text())
    data["nodes"] = [{**n, "usd_per_hour": n["usd_per_hour"] * 0.9} for n in data["nodes"][::-1]]
    data["profiles"] = [
        {**p, "decode_step_ms": p["decode_step_ms"] * 1.2} for p in data["profiles"]
    ]
    path = tmp_path / "my-fleet.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _train(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, str]:
    code = main(["train", "--trace", TRACE, "--out", str(tmp_path / "out"), *args])
    return code, capsys.readouterr().err


def test_every_heldout_fleet_has_its_own_fingerprint() -> None:
    prints = {fingerprint(load_topology(p)) for p in heldout_files()}
    assert len(prints) == len(heldout_files())
    assert fingerprint(load_topology(TOPOLOGIES / "fleet-demo.yaml")) not in prints


def test_train_refuses_a_heldout_fleet_by_its_place(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = _train(capsys, tmp_path, "--topology", str(FLEET), "--timesteps", "1")
    assert code == 2
    assert f"refused: it is the held-out suite's fleet {FLEET.name}" in err
    assert not (tmp_path / "out").exists()


def test_train_refuses_a_heldout_fleet_by_its_content(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    disguised = _disguised(tmp_path)
    assert heldout_match(disguised) == FLEET.name
    demo = str(TOPOLOGIES / "fleet-demo.yaml")
    code, err = _train(capsys, tmp_path, "--topology", demo, "--extra-topologies", str(disguised))
    assert code == 2 and f"{disguised}: refused" in err


def test_a_symlink_into_the_suite_is_the_suite(tmp_path: Path) -> None:
    link = tmp_path / "link.yaml"
    link.symlink_to(FLEET)
    with pytest.raises(InputFileError, match="never trained or selected on"):
        refuse_heldout([link])


def test_only_the_suite_fine_tune_of_one_fleet_from_init_gets_through(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    refuse_heldout([FLEET], allow_fine_tune=True, init="generalist")
    refuse_heldout([TOPOLOGIES / "fleet-demo.yaml"])
    with pytest.raises(InputFileError, match="only be fine-tuned alone, from --init"):
        refuse_heldout([FLEET], allow_fine_tune=True, init=None)
    code, err = _train(
        capsys,
        tmp_path,
        "--topology",
        str(FLEET),
        "--extra-topologies",
        str(TOPOLOGIES / "fleet-demo.yaml"),
        "--init",
        "generalist",
        "--heldout-fine-tune",
    )
    assert code == 2 and "may only be fine-tuned alone" in err


@pytest.mark.parametrize("fleet", validation_files(), ids=lambda p: p.stem)
def test_train_refuses_a_validation_fleet_by_place_and_by_content_even_as_a_fine_tune(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fleet: Path
) -> None:
    assert heldout_match(fleet) is None
    code, err = _train(capsys, tmp_path, "--topology", str(fleet), "--init", "generalist")
    assert code == 2
    assert f"refused: it is the validation fleet {fleet.name}" in err
    disguised = _disguised(tmp_path, fleet)
    assert validation_match(disguised) == fleet.name
    with pytest.raises(InputFileError, match="candidates are chosen on it"):
        refuse_heldout([disguised], allow_fine_tune=True, init="generalist")
    assert not (tmp_path / "out").exists()


def test_the_validation_fleets_are_not_the_suite_s() -> None:
    assert len(validation_files()) >= 2
    suite = {fingerprint(load_topology(p)) for p in heldout_files()}
    assert not suite & {fingerprint(load_topology(p)) for p in validation_files()}
