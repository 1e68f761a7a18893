"""The twin's calibration, old against new, on the held-out suite's fleets with perturbed truths.

    .venv/bin/python -m tools.twin_bench --old-python ../locus-before/.venv/bin/python \
        [--fleets gpu-poor-regional,sovereign-eu-us,...] [--seeds 0,1,2] [--limit 2000] \
        [--utilisations 0.6,1.5] [--traffic spread,concentrated] [--json out.json]

For each fleet of optimizer/topologies/heldout/ (its truth: two profiles perturbed, x1.25 and
x0.85 the time, FLEETS), each traffic (spread: least-loaded; concentrated: weighted-score),
utilisation and seed, the observations of the truth are written once
(`optimizer.calibration.scenarios`) and calibrated twice:

- new: this checkout's `calibrate`; what would be applied is its proposal when the verdict is
  "improved", else the nominal fleet (the guard: applying it takes an override);
- old: `calibrate` of the checkout `--old-python` runs in (e.g. a worktree of main before
  the twin guard: `git worktree add ../locus-before 9630823`), in a subprocess; it had no
  guard, so its proposal is what would be applied.
  It fits on every observation, the held-out ones included (an advantage to it).

Both applied fleets are then judged here, the same way: the held-out TTFT and E2E errors
(median and p95 absolute relative error over the last 25% of measured requests by arrival,
`optimizer.calibration.holdout.split`), and every profile value against the truth. Prints one
row per fleet, traffic and utilisation (means over seeds; "worse" counts seeds where the
applied fleet's held-out TTFT median or p95 error is worse than the nominal fleet's; "off"
counts values applied more than 10% from the truth, over all seeds; "recovered" the perturbed
values applied within 10% of the truth). Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import fmean
from typing import Any

from optimizer.calibration import calibrate
from optimizer.calibration.holdout import IMPROVED, split
from optimizer.calibration.replay import all_active, fidelity, replay
from optimizer.calibration.scenarios import TRAFFIC, Scenario, observe, perturbed
from optimizer.observations import Observations
from optimizer.topology import Topology
from optimizer.topology_files import load_topology

REPO = Path(__file__).resolve().parents[1]
HELDOUT = REPO / "optimizer" / "topologies" / "heldout"
AZURE = REPO / "optimizer" / "data" / "traces" / "azure_llm_2023_conv.csv"
FLEETS: dict[str, dict[str, float]] = {
    "gpu-poor-regional": {"qwen2.5-7b@a10g": 1.25, "qwen2.5-7b@h100": 0.85},
    "sovereign-eu-us": {"llama-3.1-8b@h100": 1.25, "llama-3.1-8b@l40s": 0.85},
    "retail-edge": {"llama-3.1-8b@jetson-agx-orin-64": 1.25, "llama-3.1-8b@l4": 0.85},
    "mooncake-long-context": {"llama-3.1-70b@a800": 1.25, "llama-3.1-70b@h800": 0.85},
    "llmd-h100-pool": {"qwen3-32b@h100": 1.25},
}
VALUES = ("prefill_tokens_per_s", "decode_step_ms", "decode_step_ms_per_seq")

# Run in the old checkout: calibrate with its own code, write the calibrated fleet.
OLD = """
import json, sys
from optimizer.calibration import calibrate
from optimizer.observations import load_observations
from optimizer.topology_files import dump_topology, load_topology
nominal = load_topology(sys.argv[1])
result = calibrate(nominal, load_observations(sys.argv[2], nominal, seed=int(sys.argv[4])))
open(sys.argv[3], "w").write(dump_topology(result.topology))
"""


def _old(python: str, fleet: Path, observations: Path, out: Path, seed: int) -> Topology:
    checkout = Path(python).resolve().parents[2]
    subprocess.run(
        [python, "-c", OLD, str(fleet), str(observations), str(out), str(seed)],
        cwd=checkout,
        check=True,
    )
    return load_topology(out)


def _judge(
    applied: Topology, nominal: Topology, truth: Topology, observations: Observations
) -> dict[str, Any]:
    held_out = observations.measured & ~split(observations)
    errors = fidelity(replay(all_active(applied), observations), observations, held_out)
    true = {(p.model, p.accelerator): p for p in truth.profiles}
    base = {(p.model, p.accelerator): p for p in nominal.profiles}
    off = recovered = perturbed_values = 0
    for p in applied.profiles:
        key = (p.model, p.accelerator)
        for name in VALUES:
            value, want, was = getattr(p, name), getattr(true[key], name), getattr(base[key], name)
            close = abs(value / want - 1.0) <= 0.1 if want else value == 0
            if value != was and not close:
                off += 1
            if want != was:
                perturbed_values += 1
                recovered += close
    return {"errors": errors, "off": off, "recovered": recovered, "perturbed": perturbed_values}


def _worse(errors: dict[str, Any], before: dict[str, Any]) -> bool:
    return any(
        errors["ttft"][s] > before["ttft"][s] for s in ("median_abs_rel_error", "p95_abs_rel_error")
    )


def run_cell(
    fleet: str, traffic: str, utilisation: float, seed: int, args: argparse.Namespace, tmp: Path
) -> dict[str, Any]:
    path = HELDOUT / f"{fleet}.yaml"
    nominal = load_topology(path)
    truth = perturbed(nominal, FLEETS[fleet])
    scenario = Scenario(str(AZURE), traffic, utilisation, args.limit, seed)
    obs_path = tmp / f"{fleet}-{traffic}-{utilisation}-{seed}.jsonl"
    observations = observe(nominal, truth, scenario, obs_path)
    new = calibrate(nominal, observations)
    verdict = new.report["verdict"]["verdict"]
    applied_new = new.topology if verdict == IMPROVED else nominal
    applied_old = _old(args.old_python, path, obs_path, obs_path.with_suffix(".old.yaml"), seed)
    held_out = observations.measured & ~split(observations)
    before = fidelity(replay(all_active(nominal), observations), observations, held_out)
    return {
        "fleet": fleet,
        "traffic": traffic,
        "utilisation": utilisation,
        "seed": seed,
        "before": before,
        "verdict": verdict,
        "old": _judge(applied_old, nominal, truth, observations),
        "new": _judge(applied_new, nominal, truth, observations),
    }


def _pct(values: list[float]) -> str:
    return f"{100 * fmean(values):.1f}"


def table(cells: list[dict[str, Any]]) -> str:
    rows = [
        "| fleet | traffic | util | TTFT med % nominal / old / new | TTFT p95 % nominal / old"
        " / new | E2E med % old / new | E2E p95 % old / new | worse (seeds) old / new | off"
        " >10% old / new | recovered old / new | new verdicts |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str, float], list[dict[str, Any]]] = {}
    for cell in cells:
        groups.setdefault((cell["fleet"], cell["traffic"], cell["utilisation"]), []).append(cell)
    for (fleet, traffic, util), group in groups.items():

        def err(side: str, metric: str, stat: str, g: list[dict[str, Any]] = group) -> str:
            if side == "before":
                return _pct([c["before"][metric][stat] for c in g])
            return _pct([c[side]["errors"][metric][stat] for c in g])

        med, p95 = "median_abs_rel_error", "p95_abs_rel_error"
        worse = {s: sum(_worse(c[s]["errors"], c["before"]) for c in group) for s in ("old", "new")}
        off = {s: sum(c[s]["off"] for c in group) for s in ("old", "new")}
        rec = {
            s: f"{sum(c[s]['recovered'] for c in group)}/{sum(c[s]['perturbed'] for c in group)}"
            for s in ("old", "new")
        }
        improved = sum(c["verdict"] == IMPROVED for c in group)
        rows.append(
            f"| {fleet} | {traffic} | {util:g} "
            f"| {' / '.join(err(side, 'ttft', med) for side in ('before', 'old', 'new'))}"
            f" | {' / '.join(err(side, 'ttft', p95) for side in ('before', 'old', 'new'))}"
            f" | {err('old', 'e2e', med)} / {err('new', 'e2e', med)}"
            f" | {err('old', 'e2e', p95)} / {err('new', 'e2e', p95)}"
            f" | {worse['old']} / {worse['new']} | {off['old']} / {off['new']}"
            f" | {rec['old']} / {rec['new']} | {improved}/{len(group)} improved |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old-python", required=True, help="python of the old checkout's venv")
    parser.add_argument("--fleets", default=",".join(FLEETS))
    parser.add_argument("--traffic", default=",".join(TRAFFIC))
    parser.add_argument("--utilisations", default="0.6,1.5")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--json", help="also write every cell's figures here")
    args = parser.parse_args(argv)
    fleets = [f for f in args.fleets.split(",") if f]
    unknown = sorted(set(fleets) - set(FLEETS))
    if unknown:
        parser.error(f"--fleets: unknown {unknown}; known: {sorted(FLEETS)}")
    cells = []
    with tempfile.TemporaryDirectory() as directory:
        for fleet in fleets:
            for traffic in args.traffic.split(","):
                for utilisation in (float(u) for u in args.utilisations.split(",")):
                    for seed in (int(s) for s in args.seeds.split(",")):
                        cell = run_cell(fleet, traffic, utilisation, seed, args, Path(directory))
                        print(
                            f"{fleet} {traffic} {utilisation:g} seed {seed}: "
                            f"verdict {cell['verdict']}, off old {cell['old']['off']} "
                            f"new {cell['new']['off']}",
                            file=sys.stderr,
                            flush=True,
                        )
                        cells.append(cell)
    if args.json:
        Path(args.json).write_text(json.dumps(cells, indent=1) + "\n", encoding="utf-8")
    print(table(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
