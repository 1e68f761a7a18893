"""Turning request bodies into `Scrape`s: what one node reported at one instant.

Every ingest path (JSON samples, Prometheus text, remote-write) ends up as the same shape, so
mapping, storage and state never care where a value came from. Parsing validates the whole
body first and raises `BatchInvalid` naming each bad sample, so a malformed batch is refused
whole (never half stored). Every path holds sample times to the same `TimeWindow` (not older
than the retention, not further ahead than LOCUS_TELEMETRY_MAX_FUTURE_SECONDS).

The API parses with `strict=True` (refuse the batch); the worker re-parses an accepted batch
with `strict=False`, which skips (and logs) a sample that fails instead of failing the whole
batch: only a batch accepted by older code or under other settings can have one.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from console.api import jsonbody
from telemetry.metrics import SAMPLES_REFUSED

logger = logging.getLogger(__name__)

LabelSet = tuple[tuple[str, str], ...]
SeriesKey = tuple[str, LabelSet]
NO_LABELS: LabelSet = ()
# Labels that name the node rather than describe the series (remote-write, scrapes).
NODE_LABELS = frozenset({"instance", "node"})
# How many bad series an error answer names (a huge body must not make a huge answer).
MAX_NAMED = 20


@dataclass(slots=True)
class Scrape:
    """All values one node reported at one time: {(metric name, sorted labels): value}."""

    node: str
    ts: datetime
    values: dict[SeriesKey, float] = field(default_factory=dict)
    size: int = 0  # values in the sample, also when `values` was not built (validation only)


class BatchInvalid(Exception):
    """A body that cannot be accepted; `errors` follows the API error shape, `status` is the
    HTTP status to answer (413 for a body too large once decompressed)."""

    def __init__(self, message: str, errors: dict[str, Any], status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors
        self.status = status


def parse_rfc3339(text: Any) -> datetime:
    """An aware datetime from RFC 3339 text; raises ValueError with a readable reason."""
    if not isinstance(text, str):
        raise ValueError("must be an RFC 3339 string, e.g. 2025-01-31T12:00:00Z")
    try:
        ts = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an RFC 3339 time") from None
    if ts.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset (add Z or +00:00)")
    return ts


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """The sample times ingest accepts, relative to when the batch was received.

    One rule for every ingest path: older than the retention would be deleted at once (and
    would make storage create partitions back to 1970 for a sample stamped 0); further ahead
    than `future_s` would make a node look fresh until that time comes.
    """

    reference: datetime
    oldest: timedelta
    future_s: float

    def problem(self, ts: datetime) -> str | None:
        """Why `ts` is outside the window, or None when it is inside."""
        if ts > self.reference + timedelta(seconds=self.future_s):
            return f"is more than {self.future_s:g} s in the future"
        if ts < self.reference - self.oldest:
            return f"is older than the retention ({self.oldest.days} days)"
        return None

    def epoch_problem(self, seconds: float) -> str | None:
        """`problem` for a Unix time in seconds, including ones no datetime can hold."""
        if not math.isfinite(seconds):
            return "is not a finite time"
        # Compared as numbers: datetime.fromtimestamp fails (OSError, OverflowError) long
        # before a float runs out, so only times inside the window are ever converted.
        if seconds > self.reference.timestamp() + self.future_s:
            return f"is more than {self.future_s:g} s in the future"
        if seconds < (self.reference - self.oldest).timestamp():
            return f"is older than the retention ({self.oldest.days} days)"
        return None


def as_finite_float(value: Any) -> float | None:
    """`value` as a finite float, or None (a 400-digit integer overflows; NaN and infinities)."""
    try:
        number = float(value)
    except (OverflowError, TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _worker_float(value: int | float) -> float:
    """float(value) for the worker: what does not fit becomes an infinity, which the mapper
    drops and counts like any other non-reading, instead of failing the batch."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def parse_json_samples(
    body: bytes, *, window: TimeWindow, build: bool = True, strict: bool = True
) -> list[Scrape]:
    """`{"samples": [{"node", "ts", "metrics": {name: number}}]}` (docs/contracts.md §4) as Scrapes.

    With build=False only validates (the API does that; the worker builds the values).
    """
    try:
        # The API refuses a NUL character anywhere (400 naming the sample); the worker only
        # skips the samples `_sample_problems` finds one in.
        data = jsonbody.loads(body) if strict else json.loads(body)
    except jsonbody.JsonBodyError as exc:
        if "body" in exc.errors:
            raise BatchInvalid("The body is not JSON.", exc.errors) from None
        raise BatchInvalid(f"{exc.message} Nothing was stored.", exc.errors) from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise BatchInvalid("The body is not JSON.", {"body": [str(exc)]}) from None
    samples = data.get("samples") if isinstance(data, dict) else None
    if not isinstance(samples, list) or not samples:
        raise BatchInvalid(
            "The request is invalid.", {"samples": ["A non-empty list of samples is required."]}
        )
    scrapes: list[Scrape] = []
    errors: dict[str, dict[str, list[str]]] = {}
    for index, sample in enumerate(samples):
        problems = _sample_problems(sample, window, finite=strict)
        if problems:
            errors[str(index)] = problems
            continue
        metrics = sample["metrics"]
        values = (
            {(name, NO_LABELS): _worker_float(v) for name, v in metrics.items()} if build else {}
        )
        scrapes.append(
            Scrape(
                node=sample["node"],
                ts=parse_rfc3339(sample["ts"]),
                values=values,
                size=len(metrics),
            )
        )
    if errors:
        message = f"{len(errors)} of {len(samples)} samples are invalid; nothing was stored."
        if strict:
            raise BatchInvalid(message, {"samples": errors})
        logger.warning("skipping invalid samples of an accepted batch: %s", errors)
        SAMPLES_REFUSED.inc(sum(_values_in(samples[int(index)]) for index in errors))
    return scrapes


def _values_in(sample: Any) -> int:
    metrics = sample.get("metrics") if isinstance(sample, dict) else None
    return len(metrics) if isinstance(metrics, dict) and metrics else 1


def _sample_problems(sample: Any, window: TimeWindow, *, finite: bool) -> dict[str, list[str]]:
    if not isinstance(sample, dict):
        return {"non_field_errors": ["must be an object with node, ts and metrics"]}
    problems: dict[str, list[str]] = {}
    node = sample.get("node")
    if not isinstance(node, str) or not node or "\x00" in node:
        problems["node"] = ["must be a node name"]
    try:
        ts = parse_rfc3339(sample.get("ts"))
    except ValueError as exc:
        problems["ts"] = [str(exc)]
    else:
        late = window.problem(ts)
        if late:
            problems["ts"] = [f"{sample['ts']} {late}"]
    metrics = sample.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        problems["metrics"] = ["must be a non-empty object of name: number"]
    else:
        # bool is an int subclass; true/false are not readings. A value no float64 holds (a
        # 400-digit integer, 1e999, NaN, Infinity: JSON has no non-finite numbers) is refused
        # here; the worker (finite=False) maps what got in anyway to an infinity, dropped.
        bad = [
            name
            for name, v in metrics.items()
            if type(v) not in (int, float) or not name or len(name) > 200 or "\x00" in name
        ]
        if bad:
            problems["metrics"] = [f"{name!r} must map to a number" for name in bad[:5]]
        elif finite:
            huge = [name for name, v in metrics.items() if as_finite_float(v) is None]
            if huge:
                problems["metrics"] = [
                    f"{name!r} must map to a finite number a float64 can hold" for name in huge[:5]
                ]
    return problems


def series_text(name: str, labels: dict[str, str]) -> str:
    """`name{a="b",...}` as Prometheus writes a series (for error messages)."""
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}" if inner else name


def parse_prometheus_text(
    text: str, *, node: str, window: TimeWindow, strict: bool = True
) -> list[Scrape]:
    """A text exposition (what an exporter's /metrics returns) as Scrapes for one node.

    Parsed with prometheus_client's maintained parser. Samples without a timestamp get the
    window's reference (the time of the scrape or push); samples with one are grouped by it and
    must lie inside the window.
    """
    text = _without_nul_lines(text, strict=strict)
    by_ts: dict[float | None, Scrape] = {}
    late: dict[str, list[str]] = {}  # the first few series refused, for the answer
    refused = 0
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                stamp = None if sample.timestamp is None else float(sample.timestamp)
                scrape = by_ts.get(stamp)
                if scrape is None:
                    if stamp is None:
                        when = window.reference
                    else:
                        problem = window.epoch_problem(stamp)
                        if problem:
                            refused += 1
                            if len(late) < MAX_NAMED:
                                series = series_text(sample.name, sample.labels)
                                late[series] = [f"timestamp {stamp:g} {problem}"]
                            continue
                        when = datetime.fromtimestamp(stamp, tz=UTC)
                    scrape = by_ts[stamp] = Scrape(node=node, ts=when)
                labels = tuple(sorted(sample.labels.items())) if sample.labels else NO_LABELS
                scrape.values[(sample.name, labels)] = float(sample.value)
    except (ValueError, TypeError, IndexError, OverflowError) as exc:
        raise BatchInvalid(
            "The body is not valid Prometheus text exposition.", {"body": [str(exc)]}
        ) from None
    if refused:
        message = (
            f"{refused} samples have timestamps outside the accepted window "
            f"(first: {next(iter(late))}); nothing was stored."
        )
        if strict:
            raise BatchInvalid(message, {"series": late})
        logger.warning("skipping samples of an accepted batch: %s %s", message, late)
    if not by_ts and strict:
        raise BatchInvalid("The request is invalid.", {"body": ["No samples in the body."]})
    return list(by_ts.values())


def _without_nul_lines(text: str, *, strict: bool) -> str:
    """Refuse (strict) or drop (the worker) the lines holding U+0000: the text format has no
    escape for it, so a NUL is always raw, and no database text column stores one."""
    if "\x00" not in text:
        return text
    lines = text.split("\n")
    bad = [number for number, line in enumerate(lines, start=1) if "\x00" in line]
    if strict:
        named = {f"line {n}": [jsonbody.NUL_MESSAGE] for n in bad[:MAX_NAMED]}
        raise BatchInvalid(
            f"Line {bad[0]} holds a NUL character (U+0000); nothing was stored.", {"body": named}
        )
    logger.warning("skipping %d lines holding NUL of an accepted batch", len(bad))
    SAMPLES_REFUSED.inc(len(bad))
    return "\n".join(line for line in lines if "\x00" not in line)


def is_reading(value: float) -> bool:
    """False for values that mean "no reading": NaN, infinities and int64 blank sentinels.

    dcgm-exporter reports DCGM's blank values for idle or unsupported fields; the int64 ones
    are 0x7ffffffffffffff0 and up (~9.22e18, dcgm_structs.h DCGM_INT64_BLANK), and a float64
    can only hold them as ~9.2e18, so anything that large is a sentinel, not a reading.
    """
    return math.isfinite(value) and abs(value) < 9.0e18
