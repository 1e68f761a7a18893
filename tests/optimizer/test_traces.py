"""Trace loading (docs/contracts.md §2) for both formats, with errors naming the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.errors import InputFileError
from optimizer.traces import load_trace
from tests.optimizer.fleets import AZURE, MOONCAKE


def test_mooncake_trace_loads_with_prefix_blocks() -> None:
    trace = load_trace(MOONCAKE, limit=50)
    assert len(trace) == 50
    assert trace[0].arrival_s == 0.0 and trace[0].prompt_tokens == 40160
    assert trace[0].hash_ids[:3] == (0, 1, 2)


def test_azure_trace_loads_with_unshared_blocks() -> None:
    trace = load_trace(AZURE, limit=200)
    assert trace[0].arrival_s == 0.0
    assert trace[1].arrival_s == pytest.approx(4.3145790)
    assert (trace[0].prompt_tokens, trace[0].output_tokens) == (374, 44)
    blocks = [h for r in trace for h in r.hash_ids]
    assert len(blocks) == len(set(blocks))
    assert len(trace[0].hash_ids) == 1  # 374 tokens fit in one 512-token block


def test_load_scales_arrival_rate() -> None:
    slow = load_trace(MOONCAKE, limit=100)
    fast = load_trace(MOONCAKE, limit=100, load=4.0)
    assert fast[-1].arrival_s == pytest.approx(slow[-1].arrival_s / 4)


def test_bad_jsonl_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 5, "output_length": 1}\n{oops\n')
    with pytest.raises(InputFileError, match=r"t.jsonl:2: malformed JSON"):
        load_trace(path)


def test_a_jsonl_line_may_name_its_session_and_a_bad_one_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    line = '{"timestamp": 0, "input_length": 5, "output_length": 1%s}\n'
    path.write_text(line % ', "session": "conv-7"' + line % "")
    assert [r.session for r in load_trace(path)] == ["conv-7", None]
    path.write_text(line % ', "session": 7')
    with pytest.raises(InputFileError, match=r"t.jsonl:1: field 'session': expected a name"):
        load_trace(path)


def test_bad_csv_value_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.1,ten,4\n"
    )
    with pytest.raises(InputFileError, match=r"t.csv:3: field 'ContextTokens'"):
        load_trace(path)


def test_unknown_extension_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    path.write_text("x")
    with pytest.raises(InputFileError, match="unknown trace format"):
        load_trace(path)


def test_azure_2024_timestamps_with_a_zone_load(tmp_path: Path) -> None:
    """Azure's 2024 traces: 6 fractional digits and a UTC offset; a byte-order mark is fine."""
    path = tmp_path / "t.csv"
    path.write_text(
        "\ufeffTIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2024-05-10 00:00:00.009930+00:00,4808,10\n"
        "2024-05-10 02:00:01.509930+02:00,3180,8\n"
    )
    trace = load_trace(path)
    assert [r.arrival_s for r in trace] == [0.0, pytest.approx(1.5)]
    assert [r.prompt_tokens for r in trace] == [4808, 3180]


def test_azure_stamps_without_a_zone_are_utc(tmp_path: Path) -> None:
    """A naive stamp is not read in the machine's zone: a trace across a daylight-saving
    change keeps its real gaps (Europe's 2023 change was at 01:00 UTC on 29 October)."""
    path = tmp_path / "t.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-10-29 00:30:00.0,10,1\n2023-10-29 01:30:00.0,10,1\n"
    )
    trace = load_trace(path)
    assert trace[1].arrival_s == 3600.0


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"timestamp": NaN, "input_length": 5, "output_length": 1}', "timestamp"),
        ('{"timestamp": Infinity, "input_length": 5, "output_length": 1}', "timestamp"),
        ('{"timestamp": 0, "input_length": "5", "output_length": 1}', "input_length"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1.5}', "output_length"),
    ],
)
def test_mooncake_values_must_be_real_numbers(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 5, "output_length": 1}\n' + line + "\n")
    with pytest.raises(InputFileError, match=rf"t.jsonl:2: field '{field}'"):
        load_trace(path)


def test_a_trace_that_is_not_text_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(InputFileError, match=r"t.jsonl: not UTF-8 text"):
        load_trace(path)


@pytest.mark.parametrize("load", [0.0, -1.0, float("nan"), float("inf")])
def test_load_must_be_a_positive_number(load: float) -> None:
    with pytest.raises(InputFileError, match="--load must be a positive number"):
        load_trace(MOONCAKE, limit=5, load=load)
