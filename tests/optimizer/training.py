"""A tiny training budget for tests that drive `optimizer.rl.train.train` end to end: every
phase runs (imitation, PPO, validation, export) in seconds."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from optimizer.rl.config import TrainConfig


def tiny_config(
    topology: Path | str, trace: Path | str, out: Path | str, **changes: Any
) -> TrainConfig:
    """256 imitation decisions over 1 epoch, 256 PPO steps in rollouts of 64, windows of 128
    arrivals, one validation utilisation (0.9) every 128 steps, a 16-wide network; `changes`
    replace any field."""
    config = TrainConfig(
        topology=str(topology),
        trace=str(trace),
        out=str(out),
        timesteps=256,
        bc_steps=256,
        bc_epochs=1,
        n_steps=64,
        batch_size=64,
        window=128,
        validate_every=128,
        validation_utilisations=(0.9,),
        hidden=16,
    )
    return dataclasses.replace(config, **changes)
