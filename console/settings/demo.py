"""The living demo (`make run`, console.demo): where its clients send their calls, the trace
they replay and how the demo fleet really behaves. docs/settings.md, "The living demo"."""

from __future__ import annotations

from console.settings.doors import LOCUS_ROUTER_HOST, LOCUS_ROUTER_PORT
from console.settings.environment import BASE_DIR, env
from console.settings.policies import LOCUS_TRACES_DIR

# Not PORT: honcho gives every process of the Procfile its own PORT.
LOCUS_WEB_PORT: int = env.int("LOCUS_WEB_PORT", default=8000)
LOCUS_DEMO_WEB_URL: str = env.str(
    "LOCUS_DEMO_WEB_URL", default=f"http://127.0.0.1:{LOCUS_WEB_PORT}"
)
# Where the demo's clients send their calls: the router (`run_router`, the Procfile's `router`).
LOCUS_DEMO_ROUTER_URL: str = env.str(
    "LOCUS_DEMO_ROUTER_URL", default=f"http://{LOCUS_ROUTER_HOST}:{LOCUS_ROUTER_PORT}"
)
LOCUS_DEMO_TRACE: str = env.str(
    "LOCUS_DEMO_TRACE", default=str(LOCUS_TRACES_DIR / "mooncake_synthetic.jsonl")
)
# How the demo fleet really behaves (docs/twin.md): profiles that differ from the inventory's
# nominal fleet-demo.yaml, so calibrating on recorded traffic has something true to find.
LOCUS_DEMO_TRUTH_TOPOLOGY: str = env.str(
    "LOCUS_DEMO_TRUTH_TOPOLOGY",
    default=str(BASE_DIR / "optimizer" / "topologies" / "fleet-demo-truth.yaml"),
)
# demo_prepare schedules a calibration of the demo's first minutes of recorded traffic.
LOCUS_DEMO_CALIBRATION_MINUTES: float = env.float("LOCUS_DEMO_CALIBRATION_MINUTES", default=20.0)
LOCUS_DEMO_TRAINING_TIMESTEPS: int = env.int("LOCUS_DEMO_TRAINING_TIMESTEPS", default=50_000)
