"""A console training run refuses to train on a held-out suite fleet loaded as the inventory
(issue #26: the suite is never trained or selected on)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console.inventory.services import topology_import
from console.policies.models import TrainingRun
from optimizer.heldout.guard import heldout_files
from optimizer.topology_files import load_topology
from tests.console.policies.test_rollout import Admins

pytestmark = pytest.mark.django_db


def test_a_run_on_a_heldout_fleet_fails_before_training(
    fleet: Any, django_capture_on_commit_callbacks: Any, settings: Any, tmp_path: Path
) -> None:
    settings.LOCUS_ARTIFACTS_DIR = tmp_path / "artifacts"
    heldout = heldout_files()[0]
    topology_import(topology=load_topology(heldout), prune=True)
    admins = Admins(django_capture_on_commit_callbacks)
    with admins.capture(execute=True):
        response = admins.alice.post("/api/v1/training-runs", {"timesteps": 256}, format="json")
    assert response.status_code == 202, response.content
    run = TrainingRun.objects.get(pk=response.json()["id"])
    assert run.status == "failed"
    assert f"held-out suite's fleet {heldout.name}" in run.error
    assert not list((tmp_path / "artifacts").rglob("scorer.pt"))
