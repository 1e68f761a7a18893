"""The time-ordered hold-out and the verdict on a proposal (optimizer/calibration/holdout.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from optimizer.calibration.holdout import FIT_SHARE, split, verdict
from optimizer.observations import Observations


def _observations(measured: list[bool]) -> Observations:
    n = len(measured)
    return Observations(
        path="obs.jsonl",
        arrival_s=[float(i) for i in range(n)],
        requests=[None] * n,  # type: ignore[list-item]  # split reads only what was measured
        node=["n"] * n,
        ttft_s=np.where(measured, 0.1, np.nan),
        e2e_s=np.where(measured, 1.0, np.nan),
        ok=np.array(measured),
    )


def test_the_fit_takes_the_earliest_measured_requests_and_holds_out_the_rest() -> None:
    measured = [True, False, True, True, True, True, False, True, True]
    fit = split(_observations(measured))
    # 7 measured: the first ceil(0.75 * 7) = 6 are fitted, the last one held out; unmeasured
    # requests are in neither.
    assert fit.tolist() == [True, False, True, True, True, True, False, True, False]
    assert FIT_SHARE == 0.75


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5])
def test_a_share_outside_0_1_is_refused(share: float) -> None:
    with pytest.raises(ValueError, match="fit_share"):
        split(_observations([True, True]), share)


def _errors(ttft: tuple[float, float], e2e: tuple[float, float]) -> dict[str, Any]:
    return {
        "ttft": {"median_abs_rel_error": ttft[0], "p95_abs_rel_error": ttft[1]},
        "e2e": {"median_abs_rel_error": e2e[0], "p95_abs_rel_error": e2e[1]},
    }


BEFORE = _errors((0.006, 0.44), (0.2, 0.4))


def test_a_proposal_better_everywhere_improves() -> None:
    result = verdict(BEFORE, _errors((0.0, 0.03), (0.0, 0.05)), 100)
    assert result["verdict"] == "improved" and result["worse"] == []


def test_one_worse_metric_is_no_improvement_however_much_the_rest_gain() -> None:
    # Issue #26's overloaded run: median TTFT error 0.6% -> 7.8%, the rest much better.
    result = verdict(BEFORE, _errors((0.078, 0.03), (0.0, 0.05)), 100)
    assert result["verdict"] == "no_improvement"
    assert result["worse"] == ["ttft median"]
    assert "ttft median" in result["reason"]


def test_nothing_better_or_nothing_held_out_is_no_improvement() -> None:
    assert verdict(BEFORE, BEFORE, 100)["verdict"] == "no_improvement"
    assert verdict(BEFORE, _errors((0.0, 0.0), (0.0, 0.0)), 0)["verdict"] == "no_improvement"
