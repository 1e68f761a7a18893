"""Training over several fleets at once: one environment that draws its fleet per episode.

A generalist policy must meet fleets it has never seen (issue #18 item 4). The network is
per candidate (Deep Sets), so one set of weights serves any number of nodes; what it needs is
episodes from many fleets. `MultiFleetEnv` holds one `PlacementEnv` per fleet, all padded to
the largest fleet's row count so their observations share one space, and on each reset picks
one of them with its own seeded generator.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.candidates import Candidates
from optimizer.rl.env import PlacementEnv
from optimizer.sim import Simulator


class MultiFleetEnv(gym.Env[np.ndarray, np.int64]):
    """Delegates every call to the `PlacementEnv` of the fleet drawn at the last reset."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, envs: list[PlacementEnv]) -> None:
        super().__init__()
        if not envs:
            raise ValueError("MultiFleetEnv needs at least one environment")
        shapes = {env.observation_space.shape for env in envs}
        if len(shapes) != 1:
            raise ValueError(f"environments differ in observation shape: {shapes}")
        self.envs = envs
        self.active = envs[0]
        self.observation_space = envs[0].observation_space
        self.action_space = envs[0].action_space

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.active = self.envs[int(self.np_random.integers(len(self.envs)))]
        return self.active.reset(seed=int(self.np_random.integers(2**31 - 1)), options=options)

    def step(self, action: np.int64 | int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        return self.active.step(action)

    def action_masks(self) -> np.ndarray:
        return self.active.action_masks()

    def teacher_action(self) -> int:
        return self.active.teacher_action()

    @property
    def current(self) -> tuple[PlacementRequest | None, Candidates | None]:
        return self.active.current

    @property
    def sim(self) -> Simulator | None:
        return self.active.sim
