"""What an SLO breach is: the SLIs judged, their objectives, and the burn-rate rules.

The scheme is the SRE workbook's "Alerting on SLOs" (multiwindow, multi-burn-rate alerts), as
Sloth (`internal/alert/windows/google-30d.yaml`) and Pyrra (`slo/rules.go`, `Windows`) generate
it, and as OpenSLO's `AlertCondition` names its parts (`kind: burnrate`, `threshold`,
`lookbackWindow`, `alertAfter`, `severity`):

- SLIs, judged on each SLO's own requests from their reported outcomes:
  * `within_targets`: the share of requests served ok with TTFT and end-to-end latency within
    the SLO's targets (the tiles' attainment and the simulator's `slo_attainment`). The targets
    are p95 targets, so the objective is 95%: 5% of requests may miss (the error budget).
  * `error_rate`: only for SLOs with their own `max_error_rate`: the share of requests served
    ok, objective 1 - max_error_rate.
- Burn rate over a window = (bad requests / requests) / (1 - objective). A rule holds when the
  burn rate exceeds its factor over both its long and its short window (the short one makes a
  breach stop soon after the problem does), with enough requests in the long window.
- Two rules, the issue's scheme on the workbook's numbers for a 30-day budget: `page` at 14.4x
  over 1 h and 5 min (2% of the budget in an hour), `ticket` at 6x over 6 h and 30 min (5% in
  six hours). The workbook also pages on the 6x rule and tickets at 1x over 3 days; Locus keeps
  two levels, and windows of days outlive the demo and the store's buckets.
- Hold (OpenSLO's `alertAfter`, Prometheus' `for`): the rule must hold this long before a
  breach opens: 2 min and 15 min, Pyrra's and kubernetes-mixin's values for these windows.
- Clear: a breach resolves once its rule has not held for the rule's short window (the
  workbook's reset time of a multiwindow alert); holding again before that extends it.

LOCUS_SLO_PERIOD_DAYS scales every window, hold and clear time by period / 30 days, as Pyrra
derives its windows from the SLO's period: a 1-day period (the demo) pages over 2 min and
10 s. The factors stay: 14.4x is still 2% of the (shorter) budget per long window.
"""

from __future__ import annotations

from dataclasses import dataclass

from telemetry import conf

WORKBOOK_PERIOD_DAYS = 30.0
P95 = 0.95  # the objective a p95 target states: 95% of requests within it
# An objective of 1 leaves no budget (an infinite burn rate): keep a sliver of one.
MAX_OBJECTIVE = 0.9999
WITHIN_TARGETS = "within_targets"
ERROR_RATE = "error_rate"
PAGE = "page"
TICKET = "ticket"


@dataclass(frozen=True)
class BurnRule:
    """One multiwindow burn-rate rule (seconds at the workbook's 30-day period)."""

    severity: str
    factor: float
    long_s: float
    short_s: float
    hold_s: float
    clear_s: float

    def scaled(self, scale: float) -> BurnRule:
        return BurnRule(
            self.severity,
            self.factor,
            self.long_s * scale,
            self.short_s * scale,
            self.hold_s * scale,
            self.clear_s * scale,
        )


WORKBOOK_RULES = (
    BurnRule(PAGE, 14.4, long_s=3600, short_s=300, hold_s=120, clear_s=300),
    BurnRule(TICKET, 6.0, long_s=6 * 3600, short_s=1800, hold_s=900, clear_s=1800),
)


@dataclass(frozen=True)
class Sli:
    """One SLI of one SLO: its name and objective (the share of requests that must be good)."""

    name: str
    objective: float

    @property
    def budget(self) -> float:
        return 1.0 - min(self.objective, MAX_OBJECTIVE)


@dataclass(frozen=True)
class Counts:
    """Requests in a window, those outside a target (or failed), and those that failed."""

    requests: int = 0
    bad: int = 0
    errors: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.requests + other.requests, self.bad + other.bad, self.errors + other.errors
        )

    def bad_for(self, sli: str) -> int:
        return self.errors if sli == ERROR_RATE else self.bad


@dataclass(frozen=True)
class SloTargets:
    """What one request of the SLO is held to."""

    ttft_ms: float
    e2e_ms: float
    max_error_rate: float | None

    def within(self, *, ok: bool, ttft_ms: float | None, e2e_ms: float | None) -> bool:
        """Served ok and within every target; a latency not reported is not held against it
        (as the engine judges `slo_met`)."""
        return (
            ok
            and (ttft_ms is None or ttft_ms <= self.ttft_ms)
            and (e2e_ms is None or e2e_ms <= self.e2e_ms)
        )

    def slis(self) -> list[Sli]:
        found = [Sli(WITHIN_TARGETS, P95)]
        if self.max_error_rate is not None:
            found.append(Sli(ERROR_RATE, 1.0 - self.max_error_rate))
        return found


def scale() -> float:
    return conf.slo_period_days() / WORKBOOK_PERIOD_DAYS


def rules() -> list[BurnRule]:
    """The rules at the configured period."""
    factor = scale()
    return [rule.scaled(factor) for rule in WORKBOOK_RULES]


def bucket_seconds() -> int:
    """Width of the count buckets: a fifth of the shortest window (60 s at the workbook's
    period), so a short window is read to within a fifth of its length."""
    return max(1, round(min(rule.short_s for rule in rules()) / 5))


def burn_rate(*, bad: int, requests: int, sli: Sli) -> float | None:
    """How many times faster than the objective allows the window spends the budget."""
    if requests <= 0:
        return None
    return (bad / requests) / sli.budget


@dataclass(frozen=True)
class Judgement:
    """One rule on one SLI at one time: whether it holds, and the burn rates it saw."""

    holds: bool
    requests: int  # in the long window
    bad: int
    long_burn: float | None
    short_burn: float | None


def judge(*, long: Counts, short: Counts, sli: Sli, rule: BurnRule, min_requests: int) -> Judgement:
    """Both windows burn faster than the rule's factor, with enough requests to say so."""
    bad_long, bad_short = long.bad_for(sli.name), short.bad_for(sli.name)
    long_burn = burn_rate(bad=bad_long, requests=long.requests, sli=sli)
    short_burn = burn_rate(bad=bad_short, requests=short.requests, sli=sli)
    holds = (
        long.requests >= min_requests
        and long_burn is not None
        and short_burn is not None
        and long_burn > rule.factor
        and short_burn > rule.factor
    )
    return Judgement(holds, long.requests, bad_long, long_burn, short_burn)
