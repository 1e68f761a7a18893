"""Keep the held-out suite out of training and model selection (issue #26: "nothing is ever
tuned on this suite").

A fleet is held out if its file lies in `optimizer/topologies/heldout/` (symlinks resolved), or
if its *content* is one of those fleets: the console trains on a dump of its inventory, so a
held-out fleet loaded into the inventory arrives under another name and with other bytes. The
content fingerprint is the fleet's shape: its sites (name, tier, region, jurisdiction) and nodes
(name, site, accelerator, GPUs, models), sorted. Prices, speeds, SLOs and sources are left out,
so a calibrated or re-priced copy of a held-out fleet is still recognised.

The one sanctioned exception is the suite's own fine-tuned row: `train --init generalist`
fine-tuned on one held-out fleet, to be judged on that fleet only (`allow_fine_tune`).

The hand-written validation fleets (`optimizer/topologies/validation/`) are kept out the same
way and with no exception: candidates are chosen on them (`tools.validation_set`), and a choice
made on fleets a candidate trained on would measure memory, not transfer.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from optimizer.errors import InputFileError
from optimizer.topology import Topology
from optimizer.topology_files import load_topology

HELDOUT_DIR = Path(__file__).resolve().parents[1] / "topologies" / "heldout"
VALIDATION_DIR = HELDOUT_DIR.parent / "validation"


def fingerprint(topology: Topology) -> str:
    """A digest of the fleet's shape: sites and nodes, order-free."""
    shape = {
        "sites": sorted([s.name, s.tier, s.region, s.jurisdiction] for s in topology.sites),
        "nodes": sorted(
            [n.name, n.site, n.accelerator, n.gpus, sorted(n.models)] for n in topology.nodes
        ),
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()


def heldout_files() -> list[Path]:
    """The held-out suite's topology files."""
    return sorted(HELDOUT_DIR.glob("*.yaml"))


def validation_files() -> list[Path]:
    """The hand-written validation fleets' topology files."""
    return sorted(VALIDATION_DIR.glob("*.yaml"))


@lru_cache(maxsize=2)
def _fingerprints(directory: Path) -> dict[str, str]:
    return {fingerprint(load_topology(p)): p.name for p in sorted(directory.glob("*.yaml"))}


def _match(path: str | Path, directory: Path) -> str | None:
    resolved = Path(path).resolve()
    if resolved.is_relative_to(directory):
        return resolved.name
    return _fingerprints(directory).get(fingerprint(load_topology(path)))


def heldout_match(path: str | Path) -> str | None:
    """The held-out fleet `path` is (by place or by content), or None."""
    return _match(path, HELDOUT_DIR)


def validation_match(path: str | Path) -> str | None:
    """The validation fleet `path` is (by place or by content), or None."""
    return _match(path, VALIDATION_DIR)


def refuse_heldout(
    paths: Sequence[str | Path], *, allow_fine_tune: bool = False, init: str | None = None
) -> None:
    """Raise InputFileError, naming each one, if any of the training fleets `paths` is a
    held-out or a validation fleet. `allow_fine_tune` lets one held-out fleet through, alone
    and only as a fine-tune from `init`: the suite's fine-tuned row (its output must not be
    shipped, nor used to select anything)."""
    chosen_on = [(str(p), validation_match(p)) for p in paths]
    if any(name is not None for _, name in chosen_on):
        raise InputFileError(
            str(next(p for p, name in chosen_on if name is not None)),
            [
                f"{p}: refused: it is the validation fleet {name} "
                "(optimizer/topologies/validation/); candidates are chosen on it, so it is "
                "never trained on (issue #26)"
                for p, name in chosen_on
                if name is not None
            ],
        )
    matches = [(str(p), heldout_match(p)) for p in paths]
    held = [(p, name) for p, name in matches if name is not None]
    if not held:
        return
    if allow_fine_tune and init is not None and len(paths) == 1:
        return
    why = (
        "a held-out fleet may only be fine-tuned alone, from --init"
        if allow_fine_tune
        else "the held-out suite is never trained or selected on (issue #26)"
    )
    raise InputFileError(
        held[0][0],
        [
            f"{p}: refused: it is the held-out suite's fleet {name} "
            f"(optimizer/topologies/heldout/); {why}"
            for p, name in held
        ],
    )
