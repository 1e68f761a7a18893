"""What a suite report records of the trained policies it judged: a digest of their files, so a
later run (`heldout-suite --reuse`, `optimizer.heldout.reuse`) takes a learned policy's runs only
when it would replay the same bytes."""

from __future__ import annotations

import hashlib

from optimizer.decide.registry import resolve_policy_dir

# The files that make a trained policy what it is (`optimizer.rl.export`).
POLICY_FILES = ("scorer.pt", "policy.json")
LEARNED_ROLES = ("zero-shot", "fine-tuned")


def policy_digest(spec: str | None) -> str | None:
    """A digest of the trained-policy files `spec` names: every scorer.pt and policy.json under
    its directory (training checkpoints aside), with their paths; None for a heuristic's name
    or no policy."""
    if spec is None:
        return None
    root = resolve_policy_dir(spec)
    if not root.is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.name in POLICY_FILES and "checkpoints" not in relative.parts:
            digest.update(str(relative).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def policy_files(zero_shot: str, fine_tuned: str | None) -> dict[str, str | None]:
    """The report's `config.policy_files`: the zero-shot's and the fine-tuned's digests."""
    return {"zero-shot": policy_digest(zero_shot), "fine-tuned": policy_digest(fine_tuned)}
