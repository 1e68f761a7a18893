"""A scratch console in this process for the in-process benchmarks: settings on a temporary
SQLite database, migrated, with a fleet imported (bench_decision_cpu.py, bench_gc_pauses.py)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "optimizer" / "topologies" / "fleet-demo.yaml"


def scratch_environ(**extra: str) -> dict[str, str]:
    """Environment for a console on a fresh temporary SQLite database, no Redis."""
    scratch = tempfile.mkdtemp(prefix="locus-bench-")
    return {
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "LOCUS_VAR_DIR": scratch,
        "DATABASE_URL": f"sqlite:///{scratch}/bench.sqlite3",
        "REDIS_URL": "",
        **extra,
    }


def scratch_console(topology: Path = FLEET) -> tuple[Any, dict[str, Any]]:
    """Set Django up (environment from `scratch_environ` unless already set), migrate, import
    `topology`; return it and a realistic placements body from its first source."""
    sys.path.insert(0, str(REPO))
    for key, value in scratch_environ().items():
        os.environ.setdefault(key, value)
    import django

    django.setup()
    from django.core.management import call_command

    from console.inventory.services import topology_import
    from optimizer.topology_files import load_topology

    call_command("migrate", interactive=False, verbosity=0)
    fleet = load_topology(topology)
    topology_import(topology=fleet)
    body = {
        "model": fleet.model_shares()[0][0],
        "source": fleet.sources[0].name,
        "prompt_tokens": 1800,
        "max_output_tokens": 256,
        "prefix_hashes": [11, 12, 13],
    }
    return fleet, body
