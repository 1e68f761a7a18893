"""The learned scorer and its loader: a trained `scorer.pt` read as a Policy.

Serving reads the artifact here and never imports the training package (`optimizer.rl` writes
it: `optimizer.rl.export`). `scorer.pt` maps float32 rows (n, N_FEATURES) of the feature
contract (`optimizer.decide.state.features`) and a bool mask (n,) to one score per row;
`policy.json` beside it records the feature names and version (the loader refuses another
version), the training config and the evaluation it passed, and optionally a decision cost
weight. A GIE EPP scorer plugin whose weights came from training rather than a config file.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from threadpoolctl import threadpool_limits

from optimizer.decide.scorers.base import Policy
from optimizer.decide.scorers.fastscorer import NumpyScorer
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.features import FEATURE_NAMES, FEATURE_VERSION, N_FEATURES
from optimizer.errors import InputFileError

if TYPE_CHECKING:
    # Imported where a scorer is read or run by TorchScript, not at module import: torch
    # takes ~1.4 s to import (python -X importtime), and every console process (each
    # management command, worker and server) imports this module through the policy
    # registry, while only those that load a trained policy need torch.
    import torch

SCORER_FILE = "scorer.pt"
POLICY_FILE = "policy.json"

DECISION_COST_WEIGHT = "decision_cost_weight"
# policy.json's trust region (`optimizer.decide.scorers.trust_region`): true serves the
# scorer inside it with the defaults, an object with its settings; absent or false, none.
TRUST_REGION = "trust_region"
# Far above any useful value (0.5 was chosen for the generalist; 2 already cost it a point of
# attainment on validation), and small enough that the score stays finite for any estimate.
MAX_DECISION_COST_WEIGHT = 1000.0


def decision_cost_weight(meta: dict[str, Any]) -> float:
    """policy.json's `decision_cost_weight` (0 when absent): how many logits of the scorer one
    USD per 1k requests of a candidate's estimated cost is worth at decision time
    (`TrainedPolicy`). Raises ValueError naming the problem."""
    value = meta.get(DECISION_COST_WEIGHT, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{DECISION_COST_WEIGHT} must be a number, got {value!r}")
    if not math.isfinite(value) or not 0.0 <= value <= MAX_DECISION_COST_WEIGHT:
        raise ValueError(
            f"{DECISION_COST_WEIGHT} must be within 0..{MAX_DECISION_COST_WEIGHT:g}, got {value!r}"
        )
    return float(value)


def scorer_digest(directory: str | Path) -> str:
    """SHA-256 of a trained policy directory's decision rule ("" when scorer.pt cannot be
    read): scorer.pt, and policy.json's `decision_cost_weight` and `trust_region` when it
    sets them, since they change the decisions too. What a registered version records, and
    what serving checks before loading it. (Without either it is scorer.pt's own SHA-256.)"""
    sha = hashlib.sha256()
    try:
        with (Path(directory) / "scorer.pt").open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                sha.update(chunk)
    except OSError:
        return ""
    try:
        meta = json.loads((Path(directory) / "policy.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = None  # the loader refuses such a directory with the reason
    meta = meta if isinstance(meta, dict) else {}
    weight = meta.get(DECISION_COST_WEIGHT)
    if weight:
        sha.update(f"\0{DECISION_COST_WEIGHT}={weight!r}".encode())
    region = meta.get(TRUST_REGION)
    if region is not None:
        sha.update(f"\0{TRUST_REGION}={json.dumps(region, sort_keys=True)}".encode())
    return sha.hexdigest()


class TrainedPolicy(Policy):
    """A policy served by a trained `scorer.pt`: the candidates' feature rows -> scores,
    minus `cost_weight` x each candidate's estimated USD per 1k requests.

    The cost term (policy.json's `decision_cost_weight`, 0 by default) is a decision-time
    price on the scorer's logits: the generalist's scores spread an expensive model over
    every node that can serve it, where consolidating it on the cheapest keeps that node's
    decode batch full and each request cheap, and neither its teacher nor PPO learned that
    (docs/learned-policy.md, "The decision cost weight"). Subtracting the estimated cost, scaled as
    weighted-score's money term is, moves near-ties to the cheaper node and leaves clear
    preferences alone; the weight is chosen on a validation set, not by training. Simulator
    and live engine both call `score`, so they apply the same rule.

    Scores come from the scorer's numpy twin (`optimizer.decide.scorers.fastscorer`) when the
    module is of the exported shape, else from the TorchScript module under `torch.no_grad()`.
    Servers should call `torch.set_num_threads(1)` (docs/architecture.md: one thread is fastest for
    these tiny matrices and avoids oversubscription); the loader does so when torch still has its
    default thread count, so the simulator and a console worker that never set it get the
    single-threaded behaviour the benchmark measures.
    """

    def __init__(
        self,
        module: torch.jit.ScriptModule,
        meta: dict[str, Any],
        name: str,
        fast: NumpyScorer | None = None,
        cost_weight: float = 0.0,
    ) -> None:
        self.module = module
        self.meta = meta
        self.name = name
        self.fast = fast
        self.cost_weight = cost_weight

    def score(self, c: Candidates) -> np.ndarray:
        scores = self.score_rows(c.rows())
        if self.cost_weight:
            scores = scores - self.cost_weight * (c.est.cost_usd * 1000.0)
        return scores

    def score_rows(self, rows: np.ndarray) -> np.ndarray:
        """Scores of precomputed feature rows (every row valid)."""
        if self.fast is not None:
            return self.fast(rows)
        return self.score_rows_torch(rows)

    def score_rows_torch(self, rows: np.ndarray) -> np.ndarray:
        """Scores from the TorchScript module itself (the artifact as saved)."""
        import torch

        mask = torch.ones(rows.shape[0], dtype=torch.bool)
        with torch.no_grad():
            out = self.module(torch.from_numpy(rows), mask)
        return out.numpy().astype(np.float64)


def load_trained_policy(directory: str | Path) -> TrainedPolicy:
    """Load `scorer.pt` and `policy.json` from `directory` (written by `train`)."""
    path = Path(directory)
    meta_path = path / POLICY_FILE
    scorer_path = path / SCORER_FILE
    if not scorer_path.is_file():
        raise InputFileError(str(path), [f"no {SCORER_FILE} in {path}"])
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputFileError(str(path), [f"{meta_path}: cannot read: {exc.strerror}"]) from exc
    except json.JSONDecodeError as exc:
        raise InputFileError(str(path), [f"{meta_path}: malformed JSON: {exc.msg}"]) from exc
    if not isinstance(meta, dict):
        raise InputFileError(str(path), [f"{meta_path}: not a JSON object"])
    version = meta.get("feature_version")
    if version != FEATURE_VERSION:
        raise InputFileError(
            str(path),
            [
                f"{meta_path}: scorer was trained on feature version {version!r}, but this "
                f"build computes version {FEATURE_VERSION}; retrain it or use a matching build"
            ],
        )
    if meta.get("feature_names") != list(FEATURE_NAMES):
        raise InputFileError(str(path), [f"{meta_path}: feature names differ from this build's"])
    try:
        cost_weight = decision_cost_weight(meta)
    except ValueError as exc:
        raise InputFileError(str(path), [f"{meta_path}: {exc}"]) from exc
    import torch

    if not _threads_configured():
        if torch.get_num_threads() > 1:
            torch.set_num_threads(1)
        # The numpy twin's products run in OpenBLAS, which splits a 256-row product over
        # threads: measured here, 30 ms instead of 0.1 ms with the cores shared.
        threadpool_limits(limits=1, user_api="blas")
    module = torch.jit.load(str(scorer_path), map_location="cpu")
    module.eval()
    fast = NumpyScorer.from_module(module, N_FEATURES)
    return TrainedPolicy(module, meta, meta.get("name") or path.name, fast, cost_weight)


def _threads_configured() -> bool:
    """Whether the process chose its torch thread count (OMP/MKL environment variables)."""
    names = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    return any(os.environ.get(v) for v in names)
