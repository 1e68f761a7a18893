"""Where the suite finds each fleet's fine-tuned policy.

`--fine-tuned DIR` holds one subdirectory per fleet, named after it, in one of two layouts:

- `DIR/<fleet>/` is a `train` output: that one fine-tune is judged on every seed;
- `DIR/<fleet>/seed-<s>/` is a `train` output for every seed `s` the suite runs: replay seed
  `s` judges the fine-tune trained with `--seed s`, so the spread over seeds includes the
  fine-tune's own (issue #26: "after `train --init generalist` ... over 3 seeds").

A fleet without a subdirectory gets no fine-tuned row.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

TRAIN_FILES = ("scorer.pt", "policy.json")


def policy_dir_problems(option: str, path: Path) -> list[str]:
    """What keeps `path` from being a directory written by `train` (docs/contracts.md §3)."""
    if not path.is_dir():
        return [f"{option}: {path} is neither a policy name nor a directory"]
    missing = [name for name in TRAIN_FILES if not (path / name).is_file()]
    if missing:
        return [f"{option}: {path} is not a train output: no {' or '.join(missing)}"]
    return []


def seed_dir(fleet_dir: Path, seed: int) -> Path:
    return fleet_dir / f"seed-{seed}"


def fine_tuned_policies(
    root: Path, fleets: Sequence[str], seeds: Sequence[int]
) -> tuple[dict[str, dict[int, str]], list[str]]:
    """Per fleet with a subdirectory in `root`, the policy directory each seed judges, and the
    problems found (a layout that is neither of the module docstring's, a seed without its
    fine-tune, no fleet at all)."""
    option = "--fine-tuned"
    if not root.is_dir():
        return {}, [f"{option}: {root} is not a directory"]
    found: dict[str, dict[int, str]] = {}
    problems: list[str] = []
    for fleet in fleets:
        fleet_dir = root / fleet
        if not fleet_dir.is_dir():
            continue
        per_seed = [seed_dir(fleet_dir, s) for s in seeds]
        if any(d.is_dir() for d in per_seed) and not (fleet_dir / "policy.json").exists():
            for d in per_seed:
                problems += policy_dir_problems(option, d)
            found[fleet] = {s: str(d) for s, d in zip(seeds, per_seed, strict=True)}
        else:
            problems += policy_dir_problems(option, fleet_dir)
            found[fleet] = {s: str(fleet_dir) for s in seeds}
    if not found:
        problems.append(
            f"{option}: {root}: no fine-tuned policy for any fleet run; expected subdirectories "
            f"named {', '.join(fleets)}"
        )
    return found, problems
