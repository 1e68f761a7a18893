"""Trained policy artifacts: where a version may be registered from, what its directory must
hold (a policy.json `train` wrote for this build's features, a scorer.pt that loads), and
whether the registered file is still the one serving (its SHA-256)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings

from console.api.errors import ApplicationError
from console.policies.choices import PolicyKind
from console.policies.models import PolicyVersion
from optimizer.decide.scorers.learned import load_trained_policy, scorer_digest
from optimizer.decide.state.features import FEATURE_NAMES, FEATURE_VERSION

# What every policy.json that `train` writes holds (optimizer/rl/export.py write_policy_json
# and optimizer/rl/train.py).
POLICY_JSON_KEYS = ("feature_names", "feature_version", "name", "normalisation")


def artifact_roots() -> list[Path]:
    """Directories a trained version may be registered from: where the console's training
    runs write (`LOCUS_ARTIFACTS_DIR`) and the shipped scorers (optimizer/trained)."""
    return [
        Path(settings.LOCUS_ARTIFACTS_DIR).resolve(),
        (Path(settings.BASE_DIR) / "optimizer" / "trained").resolve(),
    ]


def artifact_directory(artifact_dir: str) -> Path:
    """The directory, symlinks and `..` resolved, if it lies inside an allowed root."""
    roots = artifact_roots()
    allowed = f"Choose a directory inside {' or '.join(str(r) for r in roots)}."
    try:
        path = Path(artifact_dir).resolve(strict=True)
    except (OSError, RuntimeError):
        raise ApplicationError(
            "The artifact directory does not exist.",
            errors={"artifact_dir": [f"No directory {artifact_dir!r}. {allowed}"]},
        ) from None
    if not any(root in path.parents for root in roots):
        raise ApplicationError(
            "The artifact directory is outside the allowed artifact roots.",
            errors={"artifact_dir": [allowed]},
        )
    if not path.is_dir():
        raise ApplicationError(
            "The artifact directory is not a directory.",
            errors={"artifact_dir": [f"{path} is not a directory."]},
        )
    return path


def read_artifact(directory: Path) -> tuple[dict[str, Any], str]:
    """policy.json (checked against this build's feature contract) and scorer.pt's SHA-256,
    once the scorer has been loaded."""

    def refuse(message: str, *problems: str) -> ApplicationError:
        return ApplicationError(message, errors={"artifact_dir": list(problems)})

    scorer = directory / "scorer.pt"
    meta_path = directory / "policy.json"
    missing = [f"no {p.name} in {directory}" for p in (scorer, meta_path) if not p.is_file()]
    if missing:
        raise refuse("The artifact directory is incomplete.", *missing)
    try:
        metadata = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise refuse("policy.json is unreadable.", f"{meta_path}: unreadable: {exc}") from None
    if not isinstance(metadata, dict):
        raise refuse("policy.json is not a policy record.", f"{meta_path}: not a JSON object.")
    absent = [key for key in POLICY_JSON_KEYS if key not in metadata]
    if absent:
        raise refuse(
            "policy.json was not written by `optimizer train`.",
            f"{meta_path}: missing {', '.join(absent)}.",
        )
    if metadata["feature_version"] != FEATURE_VERSION:
        raise refuse(
            "The scorer was trained on another feature version.",
            f"{meta_path}: feature_version {metadata['feature_version']!r}, but this build "
            f"computes version {FEATURE_VERSION}; retrain it.",
        )
    if metadata["feature_names"] != list(FEATURE_NAMES):
        raise refuse(
            "The scorer's features differ from this build's.",
            f"{meta_path}: feature_names differ from this build's.",
        )
    digest = scorer_digest(directory)
    try:
        load_trained_policy(directory)
    except Exception as exc:  # a corrupt or foreign file fails in torch in many ways
        raise refuse("scorer.pt does not load.", f"{scorer}: cannot load: {exc}") from None
    return metadata, digest


def artifact_problem(policy: PolicyVersion) -> str | None:
    """Why a trained version's scorer.pt cannot be trusted any more, or None if it is the
    file (and decision cost weight) that was registered (heuristics and versions registered
    before digests: None)."""
    if policy.kind != PolicyKind.LEARNED or not policy.artifact_sha256:
        return None
    if scorer_digest(policy.artifact_dir) != policy.artifact_sha256:
        return (
            f"{policy}: scorer.pt in {policy.artifact_dir} (or policy.json's "
            "decision_cost_weight) changed or vanished since it was registered; register the "
            "new files as a new version."
        )
    return None
