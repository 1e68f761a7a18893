"""Export the trained actor as a frozen TorchScript scorer, and load it back as a Policy.

`scorer.pt` maps float32 rows (n, N_FEATURES) from `features.candidate_rows` and a bool mask
(n,) to one score per row (masked rows -inf), with the per-feature normalisation inside; it
takes any n, because the network is per-candidate. Only the actor path is exported
(docs/architecture.md, RL notes): scripted, frozen and saved with `torch.jit.save`. `policy.json`
beside it records the feature names and version, the normalisation, the training config, the seed
and the evaluation it passed; `load_trained_policy` refuses a scorer whose feature version differs
from this build's `FEATURE_VERSION`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from threadpoolctl import threadpool_limits
from torch import nn

from optimizer.errors import InputFileError
from optimizer.features import FEATURE_NAMES, FEATURE_VERSION, N_FEATURES
from optimizer.kernel.candidates import Candidates
from optimizer.policies import decision_cost_weight
from optimizer.policies.base import Policy
from optimizer.rl.fastscorer import NumpyScorer
from optimizer.rl.network import CandidateScorer, DeepSetsPolicy

SCORER_FILE = "scorer.pt"
POLICY_FILE = "policy.json"
WEIGHTS_FILE = "weights.pt"


class ExportedScorer(nn.Module):
    """rows (n, F) float32 + mask (n,) bool -> scores (n,), masked rows -inf."""

    def __init__(self, scorer: CandidateScorer) -> None:
        super().__init__()
        self.scorer = scorer

    def forward(self, rows: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        logits = self.scorer(rows.unsqueeze(0), mask.unsqueeze(0)).squeeze(0)
        return torch.where(mask, logits, torch.full_like(logits, float("-inf")))


def export_scorer(policy: DeepSetsPolicy, path: Path) -> None:
    """Script, freeze and save the actor of `policy` to `path`."""
    actor = policy.deep_sets.actor
    scorer = CandidateScorer(n_features=actor.n_features, hidden=actor.hidden)
    scorer.load_state_dict(actor.state_dict())
    module = ExportedScorer(scorer).eval()
    frozen = torch.jit.freeze(torch.jit.script(module))
    torch.jit.save(frozen, str(path))


def save_weights(policy: DeepSetsPolicy, hidden: int, path: Path) -> None:
    """The actor, critic and value head's state, for `train --init` (the frozen TorchScript
    scorer keeps its weights as constants, so fine-tuning cannot start from it)."""
    deep_sets = policy.deep_sets
    torch.save(
        {
            "hidden": hidden,
            "feature_version": FEATURE_VERSION,
            "actor": deep_sets.actor.state_dict(),
            "critic": deep_sets.critic.state_dict(),
            "value_net": policy.value_net.state_dict(),
        },
        path,
    )


def load_weights(directory: Path) -> dict[str, Any]:
    """`weights.pt` of a trained policy directory, refused for another feature version."""
    path = directory / WEIGHTS_FILE
    try:
        data: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError) as exc:
        problem = f"{path}: cannot read the weights to start from: {exc}"
        raise InputFileError(str(path), [problem]) from exc
    if data.get("feature_version") != FEATURE_VERSION:
        raise InputFileError(
            str(path),
            [
                f"{path}: weights were trained on feature version "
                f"{data.get('feature_version')!r}, this build computes {FEATURE_VERSION}"
            ],
        )
    return data


def write_policy_json(directory: Path, data: dict[str, Any]) -> None:
    """Write `policy.json` with the feature contract first, then `data`."""
    body = {"feature_names": list(FEATURE_NAMES), "feature_version": FEATURE_VERSION, **data}
    (directory / POLICY_FILE).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")


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

    Scores come from the scorer's numpy twin (`optimizer.rl.fastscorer`) when the module is
    of the exported shape, else from the TorchScript module under `torch.no_grad()`. Servers
    should call `torch.set_num_threads(1)` (docs/architecture.md: one thread is fastest for
    these tiny matrices and avoids oversubscription); the loader does so when torch still has
    its default thread count, so the simulator and a console worker that never set it get the
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
    import os

    names = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    return any(os.environ.get(v) for v in names)
