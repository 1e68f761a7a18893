"""Cost attribution from measurements (optimizer/attribution.py)."""

from __future__ import annotations

import math

import pytest

from optimizer.attribution import attributed_cost_usd, batch_during

TIMES = [0.0, 10.0, 20.0, 30.0]
RUNNING = [2.0, 4.0, 6.0, 0.0]


def test_it_averages_the_samples_taken_while_the_request_decoded() -> None:
    assert batch_during(TIMES, RUNNING, 5.0, 25.0) == pytest.approx(5.0)
    assert batch_during(TIMES, RUNNING, 10.0, 20.0) == pytest.approx(5.0)  # bounds included


def test_it_counts_the_request_itself_when_the_last_sample_predates_it() -> None:
    # Decoding from 12 s to 18 s: the 10 s sample saw 4 others, not this request.
    assert batch_during(TIMES, RUNNING, 12.0, 18.0) == pytest.approx(5.0)
    # A sample inside the decode counted it already.
    assert batch_during(TIMES, RUNNING, 9.0, 10.5) == pytest.approx(4.0)


def test_it_never_shares_a_node_with_fewer_than_one_sequence() -> None:
    assert batch_during(TIMES, RUNNING, 29.0, 31.0) == 1.0  # the node reported 0 running


def test_it_knows_nothing_before_the_first_sample() -> None:
    assert math.isnan(batch_during(TIMES, RUNNING, -5.0, -1.0))
    assert math.isnan(batch_during([], [], 0.0, 1.0))


def test_it_charges_the_prefill_in_full_and_shares_the_decode() -> None:
    # $3.60 an hour is $0.001 a second: 2 s of prefill plus 8 s of decode among 4.
    assert attributed_cost_usd(3.6, 2.0, 8.0, 4.0) == pytest.approx(0.001 * (2.0 + 2.0))
    # Negative measurements (clock skew between a caller's TTFT and E2E) count as zero.
    assert attributed_cost_usd(3.6, -1.0, -2.0, 0.0) == 0.0


def test_it_knows_nothing_from_a_sample_older_than_the_age_bound() -> None:
    # The last sample (20 s) is 5 s before a decode from 25 s: within 10 s, not within 4 s.
    assert batch_during(TIMES[:3], RUNNING[:3], 25.0, 26.0, max_age_s=10.0) == 7.0
    assert math.isnan(batch_during(TIMES[:3], RUNNING[:3], 25.0, 26.0, max_age_s=4.0))
    # Samples inside the decode are never too old.
    assert batch_during(TIMES, RUNNING, 5.0, 25.0, max_age_s=0.0) == pytest.approx(5.0)
