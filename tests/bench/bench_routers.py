"""Side-by-side benchmark of OpenAI routers over an emulated fleet (`make bench-routers`).

    .venv/bin/python tests/bench/bench_routers.py [--quick] [--fleets single-site,multi-site]
        [--loads moderate,heavy] [--routers NAME,...] [--window-s 30] [--out FILE]

Needs the bench venv (`tests/bench/routers/setup_bench_env.sh`, which `make bench-routers`
runs). `BENCH_FLEET_PYTHON` names the Python that runs `serve-fleet` (default: this one).
See `routers/cli.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The harness's own package (`routers`), and the repository root for `tools.results`, whose
# renderer draws the table the harness prints.
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[2]))

from routers.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
