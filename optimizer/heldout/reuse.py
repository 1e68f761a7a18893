"""Runs an earlier report of the suite already holds, taken instead of replayed.

A replay's figures depend only on its job (fleet, trace, load, policy, seed, request limit and
telemetry interval) and on the code (`optimizer.rl.replays`; the suite's tests check that two
runs agree). So adding a fine-tuned row to a full suite, 990 replays and about 85 minutes on
two cores, needs only the fine-tuned replays when the heuristics', the zero-shot policy's and
the oracle's are taken from the report that already has them (`heldout-suite --reuse REPORT`).

What may be taken: a heuristic's and the oracle's runs; the zero-shot's when both runs name the
same zero-shot policy; the fine-tuned's when both name the same directory; for a trained
policy, only when its files are the same bytes too (`config.policy_files`: a digest of every
scorer.pt and policy.json its directory holds, so fine-tunes re-made into the same directory
are replayed, and a report without digests lends no learned run); each only for a cell
(fleet, trace, utilisation) and seed the earlier report ran, with the same request limit and
telemetry interval.

The figures are only worth taking if today's code and policy files replay them the same, and
a report cannot tell what code made it. So before anything is taken, `check` of the runs it
would take (spread over the plan) are replayed again and compared figure by figure; one
difference refuses the whole report ("run the suite whole"). The report names what it took
(`config.reused_from`, `config.replays_reused`, `config.reuse_checked`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optimizer.heldout.files import LEARNED_ROLES, policy_files
from optimizer.heldout.run import execute, figures
from optimizer.rl.replays import ORACLE

if TYPE_CHECKING:
    from optimizer.heldout.run import Plan, RunKey, SuiteConfig

DEFAULT_CHECK = 10
"""Runs replayed again before a report's runs are taken: about a percent of a full suite."""


def _spec(config: dict[str, Any], role: str) -> str | None:
    spec = config.get("zero_shot" if role == "zero-shot" else "fine_tuned")
    return None if spec is None else str(spec)


def _role_spec(config: dict[str, Any], role: str, files: dict[str, str | None]) -> str | None:
    """What a run of `role` replays: a heuristic's or the oracle's name, or a learned role's
    policy and the digest of its files (None: no such role)."""
    if role not in LEARNED_ROLES:
        return role
    spec = _spec(config, role)
    return None if spec is None else f"{spec} {files.get(role)}"


def reusable_runs(config: SuiteConfig, earlier: dict[str, Any]) -> dict[RunKey, dict[str, float]]:
    """Every run of `earlier` (a suite report) that `config` would replay the same, by key;
    ValueError when the report is not a suite report or was run with another request limit or
    telemetry interval (then no run of it is comparable)."""
    if earlier.get("suite") != "heldout" or not isinstance(earlier.get("cells"), list):
        raise ValueError("--reuse: not a heldout-suite report")
    old = earlier.get("config", {})
    problems = [
        f"{what} {old.get(key)!r} there, {getattr(config, key)!r} here"
        for key, what in (("limit", "limit"), ("telemetry_interval_s", "telemetry interval"))
        if old.get(key) != getattr(config, key)
    ]
    if problems:
        raise ValueError(f"--reuse: its runs are not comparable: {'; '.join(problems)}")
    seeds = list(old.get("seeds", []))
    here = {"zero_shot": config.zero_shot, "fine_tuned": config.fine_tuned}
    files_here = policy_files(config.zero_shot, config.fine_tuned)
    files_there = old.get("policy_files") or {}
    out: dict[RunKey, dict[str, float]] = {}
    for cell in earlier["cells"]:
        for role, metrics in cell["policies"].items():
            spec = _role_spec(old, role, files_there)
            if spec is None or spec != _role_spec(here, role, files_here):
                continue
            if role not in (*config.heuristics, ORACLE, "zero-shot", "fine-tuned"):
                continue
            for index, seed in enumerate(seeds):
                key = (cell["fleet"], cell["trace"], float(cell["utilisation"]), role, seed)
                out[key] = {m: float(s["runs"][index]) for m, s in metrics.items()}
    return out


def spread(indices: list[int], n: int) -> list[int]:
    """`n` of `indices` (in order), evenly spread from the first to the last."""
    if n >= len(indices):
        return list(indices)
    if n <= 0:
        return []
    picks = np.unique(np.round(np.linspace(0, len(indices) - 1, n)).astype(int))
    return [indices[int(p)] for p in picks]


@dataclass(frozen=True, slots=True)
class EarlierReport:
    """The runs an earlier report holds that a run of the suite may take (`reusable_runs`),
    and how many of them to replay again before taking any."""

    path: str
    runs: dict[RunKey, dict[str, float]]
    check: int = DEFAULT_CHECK

    def take(
        self, plan_: Plan, workers: int, progress: bool
    ) -> tuple[dict[int, dict[str, float]], int]:
        """The figures of every run of `plan_` this report holds, by job index, and how many
        were replayed to check them; ValueError when a checked run differs."""
        found = {
            i: self.runs[key]
            for i in range(len(plan_.jobs))
            if (key := plan_.run_key(i)) in self.runs
        }
        sample = spread(sorted(found), self.check)
        results = execute([plan_.jobs[i] for i in sample], workers, progress)
        for i, result in zip(sample, results, strict=True):
            again = figures(plan_.keys[i][1], result)
            if again != found[i]:
                metric = next(m for m in again if again[m] != found[i].get(m))
                raise ValueError(
                    f"--reuse: {self.path} does not hold what this code replays: "
                    f"{plan_.run_key(i)} gives {metric} {again[metric]!r} here, "
                    f"{found[i].get(metric)!r} there; run the suite whole"
                )
        return found, len(sample)
