"""A router's `/metrics` read as the live-deciders benchmark reads it: a histogram's quantiles
interpolated within its buckets as Prometheus' `histogram_quantile` does, every label set and
process summed, and a counter's value."""

from __future__ import annotations

import pytest

from routers.promtext import histogram, metric_value, quantile

EXPOSITION = """\
# HELP locus_router_overhead_seconds Router time.
# TYPE locus_router_overhead_seconds histogram
locus_router_overhead_seconds_bucket{le="0.001"} 50.0
locus_router_overhead_seconds_bucket{le="0.01"} 90.0
locus_router_overhead_seconds_bucket{le="0.1"} 100.0
locus_router_overhead_seconds_bucket{le="+Inf"} 100.0
locus_router_overhead_seconds_count 100.0
locus_router_overhead_seconds_sum 0.5
# HELP locus_shared_view_merged_total Merged.
# TYPE locus_shared_view_merged_total counter
locus_shared_view_merged_total 42.0
"""


def test_a_quantile_is_interpolated_within_its_bucket() -> None:
    buckets = [(0.001, 50.0), (0.01, 90.0), (0.1, 100.0), (float("inf"), 100.0)]
    assert quantile(buckets, 0.5) == pytest.approx(0.001)
    assert quantile(buckets, 0.7) == pytest.approx(0.001 + 0.009 * 20 / 40)
    assert quantile(buckets, 0.99) == pytest.approx(0.01 + 0.09 * 9 / 10)


def test_a_rank_in_the_infinite_bucket_reads_the_highest_finite_bound() -> None:
    assert quantile([(0.1, 90.0), (float("inf"), 100.0)], 0.99) == pytest.approx(0.1)


def test_an_empty_histogram_reads_zero() -> None:
    assert quantile([], 0.5) == 0.0
    assert histogram("", "locus_router_overhead_seconds") == {
        "count": 0, "mean": 0.0, "p50": 0.0, "p99": 0.0,
    }  # fmt: skip


def test_a_histogram_reads_its_count_mean_and_quantiles_scaled() -> None:
    read = histogram(EXPOSITION, "locus_router_overhead_seconds", scale=1000)
    assert read == {"count": 100, "mean": 5.0, "p50": 1.0, "p99": 91.0}


def test_a_counter_reads_its_total() -> None:
    assert metric_value(EXPOSITION, "locus_shared_view_merged_total") == 42.0
    assert metric_value(EXPOSITION, "locus_shared_view_up") == 0.0
