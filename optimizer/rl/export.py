"""Export the trained actor as a frozen TorchScript scorer (read back for serving by
`optimizer.decide.scorers.learned`, which never imports this package).

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

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from optimizer.decide.scorers.learned import POLICY_FILE
from optimizer.decide.state.features import FEATURE_NAMES, FEATURE_VERSION
from optimizer.errors import InputFileError
from optimizer.rl.network import CandidateScorer, DeepSetsPolicy

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
