"""Policies and the twin: evaluations, canaries, training runs, the traces they replay and
calibration (console.policies, console.twin). docs/settings.md, "Policies, evaluations,
canaries and training"."""

from __future__ import annotations

from pathlib import Path

from console.settings.environment import BASE_DIR, VAR_DIR, env

LOCUS_TRACES_DIR = Path(
    # The public traces shipped in the repository (optimizer/data/traces/README.md).
    env.str("LOCUS_TRACES_DIR", default=str(BASE_DIR / "optimizer" / "data" / "traces"))
)
LOCUS_EVALUATION_TRACE: str = env.str(
    "LOCUS_EVALUATION_TRACE", default=str(LOCUS_TRACES_DIR / "mooncake_synthetic.jsonl")
)
LOCUS_EVALUATION_LOADS: list[float] = env.list(
    "LOCUS_EVALUATION_LOADS", cast=float, default=[1.0, 4.0]
)
# Seeds 0-2, as the evaluations the docs' figures come from (docs/learned-policy.md).
LOCUS_EVALUATION_SEEDS: list[int] = env.list("LOCUS_EVALUATION_SEEDS", cast=int, default=[0, 1, 2])
LOCUS_EVALUATION_LIMIT: int | None = env.int("LOCUS_EVALUATION_LIMIT", default=None)

# The canary watchdog (console/policies/canary.py; scheduled in queues.CELERY_BEAT_SCHEDULE).
LOCUS_CANARY_WINDOW_SECONDS: float = env.float("LOCUS_CANARY_WINDOW_SECONDS", default=900.0)
LOCUS_CANARY_MIN_OUTCOMES: int = env.int("LOCUS_CANARY_MIN_OUTCOMES", default=100)
LOCUS_CANARY_MAX_ATTAINMENT_DROP: float = env.float(
    "LOCUS_CANARY_MAX_ATTAINMENT_DROP", default=0.02
)
# How sure the watchdog must be that the canary's attainment is lower before the drop counts
# (console/policies/canary.py: a one-sided two-proportion z-test).
LOCUS_CANARY_CONFIDENCE: float = env.float("LOCUS_CANARY_CONFIDENCE", default=0.99)
LOCUS_CANARY_MAX_BREACH_SHARE_INCREASE: float = env.float(
    "LOCUS_CANARY_MAX_BREACH_SHARE_INCREASE", default=0.1
)

LOCUS_ARTIFACTS_DIR = Path(env.str("LOCUS_ARTIFACTS_DIR", default=str(VAR_DIR / "artifacts")))
# Console training runs: the defaults reach the PPO issue's result in minutes on 2 cores.
LOCUS_TRAINING_TIMESTEPS: int = env.int("LOCUS_TRAINING_TIMESTEPS", default=500_000)
LOCUS_TRAINING_BC_STEPS: int = env.int("LOCUS_TRAINING_BC_STEPS", default=100_000)
# Arrivals per training episode and validation replay (optimizer.rl.config.TrainConfig.window).
LOCUS_TRAINING_WINDOW: int = env.int("LOCUS_TRAINING_WINDOW", default=4096)
# The trace that stands for this fleet's workload: training runs default to it
# (docs/learned-policy.md). The demo fleet replays the Mooncake trace.
LOCUS_FLEET_TRACE: str = env.str(
    "LOCUS_FLEET_TRACE", default=str(LOCUS_TRACES_DIR / "mooncake_synthetic.jsonl")
)
# Where training runs start: "generalist" (fine-tune the shipped generalist) or "imitation".
LOCUS_TRAINING_INIT: str = env.str("LOCUS_TRAINING_INIT", default="generalist")
# Replays of evaluations and training validations fan out as Celery tasks; one that no worker
# finishes within this many seconds is run by the waiting task itself.
LOCUS_REPLAY_TIMEOUT_S: float = env.float("LOCUS_REPLAY_TIMEOUT_S", default=1800.0)

# The twin (docs/twin.md): the widest window of recorded traffic one export or calibration
# may cover, and the measured requests a profile needs before calibration fits it.
LOCUS_OBSERVATIONS_MAX_HOURS: float = env.float("LOCUS_OBSERVATIONS_MAX_HOURS", default=744.0)
LOCUS_CALIBRATION_MIN_SAMPLES: int = env.int("LOCUS_CALIBRATION_MIN_SAMPLES", default=50)
