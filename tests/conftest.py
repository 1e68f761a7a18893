"""Shared fixtures: paths to the real data, personas for each role, and API clients."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Real traces ship with the optimizer, real exporter output with the tests (their READMEs
# give sources and licences).
TRACES = REPO / "optimizer" / "data" / "traces"
METRICS = REPO / "tests" / "data" / "metrics"
TOPOLOGIES = REPO / "optimizer" / "topologies"
CONTRACT_EXAMPLE = TOPOLOGIES / "contract-example.yaml"
ROLES = ("viewer", "operator", "admin", "service")


@pytest.fixture(autouse=True)
def _test_settings(settings):  # type: ignore[no-untyped-def]
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.CELERY_TASK_EAGER_PROPAGATES = True
    # The decision engine's threads would race the test database; tests refresh and flush
    # the engine by hand, and each test starts with a fresh one.
    settings.LOCUS_ENGINE_BACKGROUND = False
    # A full collection per engine start would cost every test ~0.3 s (test_runtime_heap.py
    # checks the freeze itself).
    settings.LOCUS_GC_FREEZE = False
    # No journal files from every test's engine (tests/console/placement/engine/test_journal.py
    # turns it on in a scratch directory).
    settings.LOCUS_RECORD_JOURNAL_DIR = ""
    # Likewise the key ring's background reload: from its own thread it cannot see a test's
    # uncommitted keys, and would swap in a ring without them mid-test.
    settings.LOCUS_API_KEY_CACHE_SECONDS = 3600.0
    from console.access.keyring import keyring

    keyring.reset()
    if not settings.REDIS_URL:
        # The embedded default is a SQLite file shared across processes; tests keep the
        # latest telemetry in memory so no state outlives a test run.
        settings.LOCUS_TELEMETRY_STATE_URL = "memory://"
    _isolate_telemetry(settings)
    # Evaluations and training runs started by tests use tiny budgets.
    settings.LOCUS_EVALUATION_LIMIT = 150
    settings.LOCUS_EVALUATION_LOADS = [1.0]
    settings.LOCUS_EVALUATION_SEEDS = [0]
    settings.LOCUS_TRAINING_TIMESTEPS = 256
    settings.LOCUS_TRAINING_BC_STEPS = 0
    from console.placement.engine.runtime import reset_runtime

    reset_runtime()
    yield
    reset_runtime()
    from telemetry.store import get_store

    get_store().clear()
    # Real hashing costs ~0.3 s a user; tests make many personas.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# The telemetry state store is one per URL and prefix for the whole process (telemetry/store.py),
# so whatever a test pushes through ingest would be every later test's latest node state: the
# decision engine reads it into its snapshot (console.placement.selectors.engine_snapshot) and
# places by it. tests/console/placement/test_parity.py leaves the demo fleet busy that way, and
# tests/console/twin/test_calibration_flow.py then routed its traffic around those queues when
# run after it (CI's full run), not when run alone. Each test therefore starts on an empty store
# under this run's own prefix (never a live console's keys on a shared Redis) and leaves it empty.
TELEMETRY_PREFIX = f"locus-test:{uuid.uuid4().hex[:12]}"


def _isolate_telemetry(settings) -> None:  # type: ignore[no-untyped-def]
    """This run's telemetry prefix, and telemetry's in-process caches forgotten: node names,
    SLO targets and series ids read from an earlier test's (rolled back) database."""
    from telemetry import breaches, storage
    from telemetry.nodes import known_nodes
    from telemetry.store import get_store

    settings.LOCUS_TELEMETRY_STATE_PREFIX = TELEMETRY_PREFIX
    get_store().clear()
    storage.clear_caches()
    known_nodes.clear()
    breaches.slo_cache.clear()
    breaches._last_eval.clear()


@pytest.fixture
def fleet(db):  # type: ignore[no-untyped-def]
    """The example fleet of docs/contracts.md §1, loaded into the inventory."""
    from console.inventory.services import topology_import
    from optimizer.topology_files import load_topology

    topology = load_topology(CONTRACT_EXAMPLE)
    topology_import(topology=topology)
    return topology


@pytest.fixture
def client_for(db) -> Callable[[str | None], object]:  # type: ignore[no-untyped-def]
    """An API client acting as a persona: None (anonymous), or one of ROLES.

    Humans sign in with a session; the `service` persona sends an API key, as services do.
    """
    from django.contrib.auth.models import Group, User
    from rest_framework.test import APIClient

    from console.access.services import api_key_create

    def make(role: str | None) -> APIClient:
        client = APIClient()
        if role == "service":
            issued = api_key_create(name=f"svc-{ApiKeyCounter.next()}", role="service")
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
        elif role is not None:
            user = User.objects.create_user(f"{role}-{ApiKeyCounter.next()}", password="pw-12345")
            user.groups.add(Group.objects.get_or_create(name=role)[0])
            client.force_login(user)
        return client

    return make


class ApiKeyCounter:
    value = 0

    @classmethod
    def next(cls) -> int:
        cls.value += 1
        return cls.value
