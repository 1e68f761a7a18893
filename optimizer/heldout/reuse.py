"""Runs an earlier report of the suite already holds, taken instead of replayed.

A replay's figures depend only on its job (fleet, trace, load, policy, seed, request limit and
telemetry interval) and on the code (`optimizer.rl.replays`; the suite's tests check that two
runs agree). So adding a fine-tuned row to a full suite, 990 replays and about 85 minutes on
two cores, needs only the fine-tuned replays when the heuristics', the zero-shot policy's and
the oracle's are taken from the report that already has them (`heldout-suite --reuse REPORT`).

What may be taken: a heuristic's and the oracle's runs; the zero-shot's when both runs name the
same zero-shot policy; the fine-tuned's when both name the same directory; each only for a cell
(fleet, trace, utilisation) and seed the earlier report ran, with the same request limit and
telemetry interval. Policy files and code must be those the earlier report was made with: the
report names what it reused (`config.reused_from`, `config.replays_reused`), and a change to
the simulator or a policy calls for a full run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from optimizer.rl.replays import ORACLE

if TYPE_CHECKING:
    from optimizer.heldout.run import RunKey, SuiteConfig


def _role_spec(config: dict[str, Any] | SuiteConfig, role: str) -> str | None:
    get = config.get if isinstance(config, dict) else lambda k: getattr(config, k)
    if role == "zero-shot":
        return str(get("zero_shot"))
    if role == "fine-tuned":
        spec = get("fine_tuned")
        return None if spec is None else str(spec)
    return role  # a heuristic or the oracle: its name is the whole policy


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
    out: dict[RunKey, dict[str, float]] = {}
    for cell in earlier["cells"]:
        for role, metrics in cell["policies"].items():
            spec = _role_spec(old, role)
            if spec is None or spec != _role_spec(config, role):
                continue
            if role not in (*config.heuristics, ORACLE, "zero-shot", "fine-tuned"):
                continue
            for index, seed in enumerate(seeds):
                key = (cell["fleet"], cell["trace"], float(cell["utilisation"]), role, seed)
                out[key] = {m: float(s["runs"][index]) for m, s in metrics.items()}
    return out
