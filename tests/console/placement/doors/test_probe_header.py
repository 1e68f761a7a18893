"""`x-locus-probe`'s value: the probe's note as an RFC 9651 Dictionary, whatever the topology
names its nodes."""

from __future__ import annotations

from console.placement.doors.probe_header import probe_header
from tests.console.placement.doors.probe_doors import parse_probe_header

NOTE = {
    "id": 7,
    "node": "fra-a10-1",
    "policy_pick": "fra-h100-2",
    "ttft_ms": 412.5,
    "ttft_target_ms": 800.0,
}


def test_it_writes_the_note_member_for_member() -> None:
    value = probe_header(NOTE)
    assert value == (
        'id=7, node="fra-a10-1", policy_pick="fra-h100-2", ttft_ms=412.5, ttft_target_ms=800.0'
    )
    assert parse_probe_header(value) == NOTE


def test_decimals_keep_three_places_at_most() -> None:
    # §4.1.5: rounded to three fractional digits, never in exponent notation.
    assert probe_header({"ttft_ms": 0.0004}) == "ttft_ms=0.0"
    assert probe_header({"ttft_ms": 12.3456}) == "ttft_ms=12.346"
    assert probe_header({"ttft_ms": 1e11}) == "ttft_ms=100000000000.0"


def test_a_value_the_format_cannot_carry_is_left_out() -> None:
    note = {**NOTE, "ttft_target_ms": 1e12, "ttft_ms": float("inf")}
    assert probe_header(note) == 'id=7, node="fra-a10-1", policy_pick="fra-h100-2"'


def test_quotes_and_backslashes_are_escaped() -> None:
    value = probe_header({"node": 'a"b\\c'})
    assert value == 'node="a\\"b\\\\c"'
    assert parse_probe_header(value) == {"node": 'a"b\\c'}


def test_a_name_beyond_ascii_is_a_display_string() -> None:
    # §3.3.8: UTF-8, percent-encoding "%", DQUOTE and every byte outside 0x20-0x7E.
    assert probe_header({"node": 'münchen-%1"'}) == 'node=%"m%c3%bcnchen-%251%22"'
