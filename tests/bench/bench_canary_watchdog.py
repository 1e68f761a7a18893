"""How often the canary watchdog's attainment rule rolls a canary back, by simulation.

    .venv/bin/python tests/bench/bench_canary_watchdog.py [--runs 2000] [--per-minute 240]

Two arms with the given true SLO attainments receive outcomes at `--per-minute` in total, half
each (the live demo at a 50% canary gets about 120 a minute on each arm); the watchdog checks
every 30 s over a 20-minute canary, on the last 15 minutes' outcomes once both arms have 100
(the shipped settings), with the margin alone and with the margin plus the significance test
(`console.policies.canary.significantly_lower`). Prints the share of canaries rolled back.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def rolled_back(
    rng: np.random.Generator, active: float, canary: float, per_tick: int, tested: bool
) -> bool:
    from console.policies.canary import ArmStats, significantly_lower

    ticks = 40  # 20 minutes of 30 s checks
    met_a = (rng.random((ticks, per_tick)) < active).sum(axis=1)
    met_c = (rng.random((ticks, per_tick)) < canary).sum(axis=1)
    for t in range(1, ticks + 1):
        start = max(0, t - 30)  # the 900 s window
        n = (t - start) * per_tick
        if n < 100:
            continue
        a = ArmStats(outcomes=n, met=int(met_a[start:t].sum()))
        c = ArmStats(outcomes=n, met=int(met_c[start:t].sum()))
        if a.attainment - c.attainment > 0.02 and (not tested or significantly_lower(c, a, 0.99)):
            return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--per-minute", type=int, default=240)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django

    django.setup()  # console.policies.canary reads the decision records' model
    rng = np.random.default_rng(0)
    per_tick = args.per_minute // 4  # two arms, two checks a minute
    for active, canary in ((0.965, 0.965), (0.965, 0.96), (0.965, 0.94), (0.965, 0.93)):
        shares = [
            np.mean([rolled_back(rng, active, canary, per_tick, t) for _ in range(args.runs)])
            for t in (False, True)
        ]
        print(
            f"active {active:.1%}, canary {canary:.1%}: rolled back within 20 min "
            f"{shares[0]:.1%} with the margin alone, {shares[1]:.1%} with the test"
        )


if __name__ == "__main__":
    main()
