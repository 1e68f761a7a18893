"""Request arrival traces (docs/contracts.md §2): Azure LLM inference CSV and Mooncake JSONL.

The format is picked by extension. Azure CSV rows are `TIMESTAMP,ContextTokens,
GeneratedTokens` with wall-clock timestamps; Mooncake JSONL lines carry `timestamp` (ms from
the start), `input_length`, `output_length` and `hash_ids` (ids of the prompt's 512-token
blocks). Azure traces have no prefix information, so each Azure request gets block ids of its
own (negative, so they never meet a Mooncake id) and nothing is shared between requests.
Arrivals are made relative to the first request and sorted (stable), so any file in these
formats replays, not only the two shipped ones.

A JSONL line may also carry `source`, `model` and `slo` (and `site`, for a caller without a
registered source): observations (docs/contracts.md §5, docs/twin.md) are traces that say who
sent each request and which model it asked for (`optimizer.arrivals.draw_requests` takes
those as given instead of drawing them). A line may carry `session` (a conversation id):
several simulated deciders split requests by it (`optimizer.sim.deciders`); the shipped
traces have none.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from optimizer.decide.request import BLOCK_TOKENS
from optimizer.errors import InputFileError

TRACE_SUFFIXES = (".csv", ".jsonl")
# The public traces shipped with the package; data/traces/README.md names their sources.
SHIPPED_TRACES = Path(__file__).resolve().parent / "data" / "traces"
_AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
# The decision API's bound on prompt and output tokens (console/placement/doors/bodies.py): far
# beyond any context window, and it keeps a hostile line from asking for 10**100 tokens.
MAX_TOKENS = 10_000_000


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One arrival of a trace: when, how long its prompt and output are, and its blocks."""

    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...]
    # Given by an observations file (None: drawn). `slo_given` tells a given null SLO (no
    # targets) from an absent one (the source's); `where` is "file:line", for errors.
    source: str | None = None
    site: str | None = None
    model: str | None = None
    slo: str | None = None
    slo_given: bool = False
    where: str = ""
    session: str | None = None  # a conversation id, for splitting among deciders


def _count(value: object, field: str, where: str, *, text: bool = True) -> int:
    """A token count: a JSON integer, or (`text`, CSV) a string of digits."""
    if isinstance(value, bool) or not (isinstance(value, int) or (text and isinstance(value, str))):
        raise ValueError(f"{where}: field '{field}': expected a whole number, got {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise ValueError(
            f"{where}: field '{field}': expected a whole number, got {value!r}"
        ) from None
    if number < 0:
        raise ValueError(f"{where}: field '{field}': must not be negative, got {number}")
    if number > MAX_TOKENS:
        raise ValueError(f"{where}: field '{field}': must be at most {MAX_TOKENS}, got {number}")
    return number


# Azure's wall-clock timestamps: 2023 traces have 7 fractional digits and no zone
# (`2023-11-16 18:15:46.6805900`), 2024 traces 6 digits and an offset
# (`2024-05-10 00:00:00.009930+00:00`). More digits than `datetime.fromisoformat` takes, so
# the fraction is parsed on its own; a stamp without a zone is UTC, not this machine's time.
_AZURE_TIME = re.compile(
    r"(?P<whole>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})(?:\.(?P<fraction>\d+))?"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2})?"
)


def _azure_time(text: str, where: str) -> float:
    """Seconds since the epoch of an Azure timestamp."""
    match = _AZURE_TIME.fullmatch(text.strip())
    try:
        if match is None:
            raise ValueError(text)
        stamp = datetime.fromisoformat(match["whole"] + (match["zone"] or ""))
    except ValueError:
        raise ValueError(f"{where}: field 'TIMESTAMP': not a timestamp: {text!r}") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    fraction = match["fraction"]
    return stamp.timestamp() + (float("0." + fraction) if fraction else 0.0)


def _read_azure(path: Path, limit: int | None) -> list[TraceRequest]:
    rows: list[TraceRequest] = []
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header[:3]) != _AZURE_COLUMNS:
            raise ValueError(f"{path}:1: expected the header {','.join(_AZURE_COLUMNS)}")
        next_block = -1
        for row in reader:
            if limit is not None and len(rows) >= limit:
                break
            where = f"{path}:{reader.line_num}"
            if not row:
                continue
            if len(row) < 3:
                raise ValueError(f"{where}: expected 3 columns, got {len(row)}")
            prompt = _count(row[1].strip(), "ContextTokens", where)
            blocks = -(-prompt // BLOCK_TOKENS)
            hashes = tuple(range(next_block, next_block - blocks, -1))
            next_block -= blocks
            rows.append(
                TraceRequest(
                    _azure_time(row[0], where),
                    prompt,
                    _count(row[2].strip(), "GeneratedTokens", where),
                    hashes,
                )
            )
    return rows


def json_lines(path: Path, limit: int | None = None) -> Iterator[tuple[dict[str, Any], str]]:
    """Each non-blank line of a JSONL file as an object with its "file:line" (up to `limit`);
    raise ValueError naming the line of one that is not a JSON object."""
    count = 0
    with path.open(encoding="utf-8-sig") as handle:
        for number, line in enumerate(handle, start=1):
            if limit is not None and count >= limit:
                break
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: malformed JSON: {exc.msg}") from None
            except RecursionError:
                raise ValueError(f"{where}: malformed JSON: nested too deeply") from None
            if not isinstance(item, dict):
                raise ValueError(f"{where}: expected a JSON object")
            count += 1
            yield item, where


def mooncake_request(item: dict[str, Any], where: str) -> TraceRequest:
    """One Mooncake JSONL object as an arrival (milliseconds to seconds, not yet relative)."""
    for field in ("timestamp", "input_length", "output_length"):
        if field not in item:
            raise ValueError(f"{where}: field '{field}' is missing")
    stamp = item["timestamp"]
    if (
        isinstance(stamp, bool)
        or not isinstance(stamp, int | float)
        or not math.isfinite(stamp)
        or stamp < 0
    ):
        raise ValueError(f"{where}: field 'timestamp': expected milliseconds >= 0")
    hashes = item.get("hash_ids", [])
    if not isinstance(hashes, list) or not all(
        isinstance(h, int) and not isinstance(h, bool) for h in hashes
    ):
        raise ValueError(f"{where}: field 'hash_ids': expected a list of integers")
    return TraceRequest(
        stamp / 1000.0,
        _count(item["input_length"], "input_length", where, text=False),
        _count(item["output_length"], "output_length", where, text=False),
        tuple(hashes),
        source=_name(item, "source", where),
        site=_name(item, "site", where),
        model=_name(item, "model", where),
        slo=_name(item, "slo", where),
        slo_given="slo" in item,
        where=where,
        session=_name(item, "session", where),
    )


def _read_mooncake(path: Path, limit: int | None) -> list[TraceRequest]:
    return [mooncake_request(item, where) for item, where in json_lines(path, limit)]


def _name(item: dict[str, Any], field: str, where: str) -> str | None:
    """An optional name field: absent or null is None, anything but a string is an error."""
    value = item.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: field '{field}': expected a name, got {value!r}")
    return value


def load_trace(
    path: str | Path, *, limit: int | None = None, load: float = 1.0
) -> list[TraceRequest]:
    """Read a trace (the first `limit` requests), with arrivals relative to the first one and
    compressed by `load` (2.0 replays twice as fast). Raise InputFileError naming the line."""
    p = Path(path)
    if not (math.isfinite(load) and load > 0):
        raise InputFileError(str(p), [f"--load must be a positive number, got {load:g}"])
    reader = {".csv": _read_azure, ".jsonl": _read_mooncake}.get(p.suffix.lower())
    if reader is None:
        raise InputFileError(
            str(p),
            [f"{p}: unknown trace format {p.suffix!r}; expected {' or '.join(TRACE_SUFFIXES)}"],
        )
    try:
        rows = reader(p, limit)
    except OSError as exc:
        raise InputFileError(str(p), [f"{p}: cannot read file: {exc.strerror}"]) from exc
    except UnicodeDecodeError as exc:
        raise InputFileError(str(p), [f"{p}: not UTF-8 text ({exc.reason})"]) from exc
    except ValueError as exc:
        raise InputFileError(str(p), [str(exc)]) from exc
    if not rows:
        raise InputFileError(str(p), [f"{p}: the trace has no requests"])
    start = min(r.arrival_s for r in rows)
    rows.sort(key=lambda r: r.arrival_s)
    return [replace(r, arrival_s=(r.arrival_s - start) / load) for r in rows]
