"""A serving process freezes its heap once its engine starts (runtime `_freeze_heap`), so full
garbage collections scan only what came later."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from console.placement.engine.runtime import runtime

pytestmark = pytest.mark.django_db


@pytest.fixture
def unfrozen() -> Any:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_it_freezes_the_heap_when_the_engine_starts(fleet: Any, settings: Any, unfrozen: Any):
    settings.LOCUS_GC_FREEZE = True
    engine = runtime()
    assert gc.get_freeze_count() == 0
    engine.ensure_started()
    assert engine.engine.snapshot is not None
    assert gc.get_freeze_count() > 10_000  # the framework and the engine, not a handful


def test_it_leaves_the_heap_alone_when_told_to(fleet: Any, settings: Any, unfrozen: Any):
    settings.LOCUS_GC_FREEZE = False
    runtime().ensure_started()
    assert gc.get_freeze_count() == 0
