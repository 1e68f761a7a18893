"""Phase 5 of `optimizer.rl.train.train`, `export`: the trained actor as a frozen TorchScript
scorer (read back for serving by `optimizer.decide.scorers.learned`, which never imports this
package), its weights for fine-tuning, and `policy.json`.

`scorer.pt` maps float32 rows (n, N_FEATURES) from `features.candidate_rows` and a bool mask
(n,) to one score per row (masked rows -inf), with the per-feature normalisation inside; it
takes any n, because the network is per-candidate. Only the actor path is exported
(docs/architecture.md, RL notes): scripted, frozen and saved with `torch.jit.save`. `policy.json`
beside it records the feature names and version, the normalisation, the training config, the seed
and the evaluation it passed; `optimizer.decide.scorers.learned.load_trained_policy` refuses a
scorer whose feature version differs
from this build's `FEATURE_VERSION`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from optimizer.decide.scorers.learned import DECISION_COST_WEIGHT, POLICY_FILE
from optimizer.decide.state.features import FEATURE_NAMES, FEATURE_VERSION
from optimizer.errors import InputFileError
from optimizer.rl import fine_tune_guard as guard
from optimizer.rl.network import CandidateScorer, DeepSetsPolicy
from optimizer.rl.run import Run

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


def export(run: Run) -> None:
    """scorer.pt (TorchScript, for serving), weights.pt (for `--init` fine-tuning) and
    policy.json with the training config, validation history and baselines."""
    c = run.config
    export_scorer(run.policy, run.out / "scorer.pt")
    save_weights(run.policy, c.hidden, run.out / "weights.pt")
    actor = run.policy.deep_sets.actor
    run.record |= {
        "name": run.out.name,
        "normalisation": {
            "shift": actor.get_buffer("shift").tolist(),
            "scale": actor.get_buffer("scale").tolist(),
            "applied_inside_scorer": True,
        },
        "training_config": _jsonable(dataclasses.asdict(c)),
        "seed": c.seed,
        "selected_weights": run.best.source,
        "validation": {
            "baselines": run.baselines,
            "selected": run.best.metrics,
            "history": [h for h in run.history if h.get("event") == "validation"],
        },
        "feature_version_trained": FEATURE_VERSION,
        DECISION_COST_WEIGHT: c.decision_cost_weight or 0.0,
    }
    if guard.guarded(run):
        run.record["fine_tune_guard"] = guard.summary(run)
    write_policy_json(run.out, run.record)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value
