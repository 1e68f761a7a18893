"""The rollout placement serves (console/placement/rollout.py): provided by the policies app
when the apps load, so that placement never imports it; without it, an error naming the app."""

from __future__ import annotations

import pytest

from console.placement import rollout
from console.policies.rollout import PolicyRollout


def test_the_policies_app_provides_the_rollout_when_the_apps_load() -> None:
    assert isinstance(rollout.rollout_store(), PolicyRollout)


def test_without_the_policies_app_placement_names_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rollout, "_store", None)
    with pytest.raises(RuntimeError, match="console.policies must be in INSTALLED_APPS"):
        rollout.rollout_store()
