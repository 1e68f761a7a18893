"""Phase 4 of `optimizer.rl.train.train`: MaskablePPO from the warm start. Each rollout logs
PPO's own metrics (`steps_per_s`, `approx_kl`, `clip_fraction`, `entropy_loss`,
`value_loss`); every `validate_every` steps the actor is checkpointed and validated, and the
best validated weights (`optimizer.rl.validation`) are what the actor ends with.
"""

from __future__ import annotations

import time

from stable_baselines3.common.callbacks import BaseCallback

from optimizer.rl import fine_tune_guard as guard
from optimizer.rl.run import Run
from optimizer.rl.validation import validate_and_keep


class _Monitor(BaseCallback):
    """Logs PPO's own metrics each rollout; validates and checkpoints every `every` steps."""

    def __init__(self, run: Run) -> None:
        super().__init__()
        self.run = run
        self.last_validation = 0
        self._clock = (time.perf_counter(), 0)

    def _on_rollout_start(self) -> None:
        values = self.model.logger.name_to_value
        now, steps = time.perf_counter(), self.num_timesteps
        if steps:
            self.run.report(
                "ppo",
                steps / max(self.run.config.timesteps, 1),
                {
                    "timesteps": steps,
                    "steps_per_s": (steps - self._clock[1]) / max(now - self._clock[0], 1e-9),
                    "approx_kl": float(values.get("train/approx_kl", 0.0)),
                    "clip_fraction": float(values.get("train/clip_fraction", 0.0)),
                    "entropy_loss": float(values.get("train/entropy_loss", 0.0)),
                    "value_loss": float(values.get("train/value_loss", 0.0)),
                },
            )
        self._clock = (now, steps)

    def _on_step(self) -> bool:
        steps = self.num_timesteps
        if steps - self.last_validation >= self.run.config.validate_every:
            self.last_validation = steps
            self.model.save(self.run.out / "checkpoints" / "latest.zip")
            validate_and_keep(self.run, steps, f"ppo@{steps}")
        return True


def ppo(run: Run) -> None:
    """MaskablePPO from the warm start, validating every `validate_every` steps; the best
    validated weights (by `validation_score`; a fine-tune's only if the guard admits them,
    `optimizer.rl.fine_tune_guard`) are kept, and the guard's decision reported."""
    if run.config.timesteps:
        monitor = _Monitor(run)
        run.model.learn(total_timesteps=run.config.timesteps, callback=monitor)
        steps = run.model.num_timesteps
        if steps != monitor.last_validation:
            validate_and_keep(run, steps, "ppo@final")
    run.policy.deep_sets.actor.load_state_dict(run.best.state)
    run.model.save(run.out / "checkpoints" / "final.zip")
    if guard.guarded(run):
        run.report("ppo", 1.0, {"event": "fine_tune_guard", **guard.summary(run)})
