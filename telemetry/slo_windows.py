"""Counts of each SLO's own requests in time buckets: how many, how many missed a target, how
many failed, for the SLO as a whole and for each (model, node) that served it.

Buckets are `slo_rules.bucket_seconds()` wide and keyed by the outcome's time. Each is a hash
in the store (Redis HINCRBY, so concurrent writers add up) that expires once the longest rule
window has passed it: `sli:{slo}:{start}` holds the SLO's totals (fields n, bad, err), and
`sli-nodes:{slo}:{start}` the same per (model, node) (fields model US node US n|bad|err, US
the ASCII unit separator, which no model or node name holds). Recording costs two round trips;
reading a window one pipelined round trip; nothing touches the database.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from telemetry import conf, slo_rules
from telemetry.slo_rules import BurnRule, Counts, Judgement, Sli, SloTargets
from telemetry.store import get_store

_SEP = "\x1f"


def _start(at: datetime, width: int) -> int:
    return int(at.timestamp()) // width * width


def _ttl() -> int:
    return int(max(rule.long_s for rule in slo_rules.rules())) + 2 * slo_rules.bucket_seconds()


def record(*, slo: str, model: str, node: str, within: bool, ok: bool, at: datetime) -> None:
    """Count one request of `slo` served by (model, node), reported at `at`."""
    incr = {"n": 1}
    if not within:
        incr["bad"] = 1
    if not ok:
        incr["err"] = 1
    store = get_store()
    start, ttl = _start(at, slo_rules.bucket_seconds()), _ttl()
    store.hincrby(f"{store.prefix}:sli:{slo}:{start}", incr, ttl)
    group = f"{model}{_SEP}{node}{_SEP}"
    store.hincrby(
        f"{store.prefix}:sli-nodes:{slo}:{start}", {group + k: v for k, v in incr.items()}, ttl
    )


class History:
    """One SLO's bucket counts up to a time, to sum any window ending then (prefix sums)."""

    def __init__(self, buckets: list[Counts]) -> None:
        self._sums = [Counts()]
        for counts in buckets:
            self._sums.append(self._sums[-1] + counts)

    def window(self, seconds: float) -> Counts:
        """The window of `seconds` ending with the bucket that holds `now`."""
        n = min(max(1, round(seconds / slo_rules.bucket_seconds())), len(self._sums) - 1)
        last, first = self._sums[-1], self._sums[-1 - n]
        return Counts(
            last.requests - first.requests, last.bad - first.bad, last.errors - first.errors
        )


def _starts(now: datetime, seconds: float, width: int) -> range:
    last = _start(now, width)
    n = max(1, round(seconds / width))
    return range(last - (n - 1) * width, last + width, width)


def read(*, slos: Iterable[str], now: datetime, seconds: float) -> dict[str, History]:
    """Each SLO's buckets of the last `seconds` before `now`, in one round trip."""
    starts = _starts(now, seconds, slo_rules.bucket_seconds())
    names = list(slos)
    store = get_store()
    keys = [f"{store.prefix}:sli:{slo}:{s}" for slo in names for s in starts]
    found = iter(store.hgetall_many(keys))
    histories: dict[str, History] = {}
    for slo in names:
        buckets = []
        for _ in starts:
            fields = next(found)
            buckets.append(
                Counts(
                    int(fields.get("n", 0)), int(fields.get("bad", 0)), int(fields.get("err", 0))
                )
                if fields
                else Counts()
            )
        histories[slo] = History(buckets)
    return histories


def read_by_node(*, slo: str, now: datetime, seconds: float) -> dict[tuple[str, str], Counts]:
    """The SLO's counts per (model, node) over the last `seconds` before `now`."""
    store = get_store()
    keys = [
        f"{store.prefix}:sli-nodes:{slo}:{s}"
        for s in _starts(now, seconds, slo_rules.bucket_seconds())
    ]
    sums: dict[tuple[str, str], dict[str, int]] = {}
    for fields in store.hgetall_many(keys):
        for name, value in fields.items():
            model, node, kind = name.rsplit(_SEP, 2)
            group = sums.setdefault((model, node), {})
            group[kind] = group.get(kind, 0) + int(value)
    return {
        group: Counts(c.get("n", 0), c.get("bad", 0), c.get("err", 0)) for group, c in sums.items()
    }


@dataclass(frozen=True)
class Verdict:
    """One (SLO, SLI, rule) judged at a time."""

    slo: str
    sli: Sli
    rule: BurnRule
    judgement: Judgement


def verdicts(*, targets: dict[str, SloTargets], now: datetime) -> list[Verdict]:
    """Every rule on every SLI of the SLOs in `targets`, judged over the windows ending at
    `now` (one read of the store). The breach evaluator, the burn-rates endpoint and the
    overview's SLO tiles all judge through here, so none of them can disagree on a burn rate."""
    names = sorted(targets)
    if not names:
        return []
    rules = slo_rules.rules()
    histories = read(slos=names, now=now, seconds=max(rule.long_s for rule in rules))
    min_requests = conf.slo_min_requests()
    return [
        Verdict(
            slo,
            sli,
            rule,
            slo_rules.judge(
                long=histories[slo].window(rule.long_s),
                short=histories[slo].window(rule.short_s),
                sli=sli,
                rule=rule,
                min_requests=min_requests,
            ),
        )
        for slo in names
        for sli in targets[slo].slis()
        for rule in rules
    ]
