"""Turning request bodies into `Scrape`s: what one node reported at one instant.

Every ingest path (JSON samples, Prometheus text, remote-write) ends up as the same shape, so
mapping, storage and state never care where a value came from. Parsing validates the whole
body first and raises `BatchInvalid` naming each bad sample, so a malformed batch is refused
whole (never half stored).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

LabelSet = tuple[tuple[str, str], ...]
SeriesKey = tuple[str, LabelSet]
NO_LABELS: LabelSet = ()
# Labels that name the node rather than describe the series (remote-write, scrapes).
NODE_LABELS = frozenset({"instance", "node"})


@dataclass(slots=True)
class Scrape:
    """All values one node reported at one time: {(metric name, sorted labels): value}."""

    node: str
    ts: datetime
    values: dict[SeriesKey, float] = field(default_factory=dict)
    size: int = 0  # values in the sample, also when `values` was not built (validation only)


class BatchInvalid(Exception):
    """A body that cannot be accepted; `errors` follows the API error shape."""

    def __init__(self, message: str, errors: dict[str, Any]) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors


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


def _check_time(ts: datetime, reference: datetime, oldest: timedelta, future: float) -> str | None:
    if ts > reference + timedelta(seconds=future):
        return f"is more than {future:g} s in the future"
    if ts < reference - oldest:
        return f"is older than the retention ({oldest.days} days)"
    return None


def parse_json_samples(
    body: bytes, *, reference: datetime, oldest: timedelta, future_s: float, build: bool = True
) -> list[Scrape]:
    """`{"samples": [{"node", "ts", "metrics": {name: number}}]}` (CONTRACTS §4) as Scrapes.

    With build=False only validates (the API does that; the worker builds the values).
    """
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BatchInvalid("The body is not JSON.", {"body": [str(exc)]}) from None
    samples = data.get("samples") if isinstance(data, dict) else None
    if not isinstance(samples, list) or not samples:
        raise BatchInvalid(
            "The request is invalid.", {"samples": ["A non-empty list of samples is required."]}
        )
    scrapes: list[Scrape] = []
    errors: dict[str, dict[str, list[str]]] = {}
    for index, sample in enumerate(samples):
        problems = _sample_problems(sample, reference, oldest, future_s)
        if problems:
            errors[str(index)] = problems
            continue
        metrics = sample["metrics"]
        values = {(name, NO_LABELS): float(v) for name, v in metrics.items()} if build else {}
        scrapes.append(
            Scrape(
                node=sample["node"],
                ts=parse_rfc3339(sample["ts"]),
                values=values,
                size=len(metrics),
            )
        )
    if errors:
        raise BatchInvalid(
            f"{len(errors)} of {len(samples)} samples are invalid; nothing was stored.",
            {"samples": errors},
        )
    return scrapes


def _sample_problems(
    sample: Any, reference: datetime, oldest: timedelta, future_s: float
) -> dict[str, list[str]]:
    if not isinstance(sample, dict):
        return {"non_field_errors": ["must be an object with node, ts and metrics"]}
    problems: dict[str, list[str]] = {}
    node = sample.get("node")
    if not isinstance(node, str) or not node:
        problems["node"] = ["must be a node name"]
    try:
        ts = parse_rfc3339(sample.get("ts"))
    except ValueError as exc:
        problems["ts"] = [str(exc)]
    else:
        late = _check_time(ts, reference, oldest, future_s)
        if late:
            problems["ts"] = [f"{sample['ts']} {late}"]
    metrics = sample.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        problems["metrics"] = ["must be a non-empty object of name: number"]
    else:
        # bool is an int subclass; true/false are not readings. NaN/Inf pass here and are
        # dropped (and counted) by the mapper, as for the other formats.
        bad = [
            name
            for name, v in metrics.items()
            if type(v) not in (int, float) or not name or len(name) > 200
        ]
        if bad:
            problems["metrics"] = [f"{name!r} must map to a number" for name in bad[:5]]
    return problems


def parse_prometheus_text(text: str, *, node: str, ts: datetime) -> list[Scrape]:
    """A text exposition (what an exporter's /metrics returns) as Scrapes for one node.

    Parsed with prometheus_client's maintained parser. Samples without a timestamp get `ts`
    (the time of the scrape or push); samples with one are grouped by it.
    """
    by_ts: dict[float | None, Scrape] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                stamp = None if sample.timestamp is None else float(sample.timestamp)
                scrape = by_ts.get(stamp)
                if scrape is None:
                    when = ts if stamp is None else datetime.fromtimestamp(stamp, tz=UTC)
                    scrape = by_ts[stamp] = Scrape(node=node, ts=when)
                labels = tuple(sorted(sample.labels.items())) if sample.labels else NO_LABELS
                scrape.values[(sample.name, labels)] = float(sample.value)
    except (ValueError, TypeError, IndexError) as exc:
        raise BatchInvalid(
            "The body is not valid Prometheus text exposition.", {"body": [str(exc)]}
        ) from None
    if not by_ts:
        raise BatchInvalid("The request is invalid.", {"body": ["No samples in the body."]})
    return list(by_ts.values())


def is_reading(value: float) -> bool:
    """False for values that mean "no reading": NaN, infinities and int64 blank sentinels.

    dcgm-exporter reports DCGM's blank values for idle or unsupported fields; the int64 ones
    are 0x7ffffffffffffff0 and up (~9.22e18, dcgm_structs.h DCGM_INT64_BLANK), and a float64
    can only hold them as ~9.2e18, so anything that large is a sentinel, not a reading.
    """
    return math.isfinite(value) and abs(value) < 9.0e18
