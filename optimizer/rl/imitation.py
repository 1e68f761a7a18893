"""Warm start: behaviour cloning of a teacher rule, so PPO starts at the teacher, not below it.

Rollouts of the environment under the teacher's choices give (rows, mask, action, return)
tuples; the per-feature normalisation is fitted on their valid rows; the actor is trained by
cross-entropy on the teacher's actions and the critic by regression on the discounted returns,
so the first PPO updates see sensible advantages instead of tearing the cloned actor apart
(the "imitate, then improve" recipe of, e.g., AlphaStar and Decima's supervised pre-training).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from optimizer.rl.env import PlacementEnv
from optimizer.rl.fleets import MultiFleetEnv
from optimizer.rl.network import DeepSetsPolicy

# A feature whose spread is below this is left unscaled (tier one-hots in a one-tier fleet).
_MIN_SCALE = 1e-3
# Episodes in a row without a single decision (each already drawn up to RESET_DRAWS times by
# the environment) after which `collect` gives up.
_MAX_EMPTY_EPISODES = 8


class NoDecisionsError(ValueError):
    """The environment's scenarios offer no decision: no arrival has a candidate node."""


@dataclass(frozen=True, slots=True)
class Demonstrations:
    """Teacher rollouts: observations (steps, rows, width), masks, actions, returns."""

    obs: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    returns: np.ndarray


def collect(
    env: PlacementEnv | MultiFleetEnv,
    steps: int,
    seed: int,
    gamma: float,
    progress: Callable[[int], None] | None = None,
) -> Demonstrations:
    """Roll the teacher out for `steps` decisions over episodes seeded from `seed`. Episodes
    without a decision (every arrival rejected) are skipped; `NoDecisionsError` is raised when
    `_MAX_EMPTY_EPISODES` of them come in a row, naming the reasons of the rejections."""
    obs_list: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    actions: list[int] = []
    returns: list[float] = []
    episode = empty = 0
    while len(actions) < steps:
        obs, _ = env.reset(seed=seed + episode)
        episode += 1
        if env.current[0] is None:
            empty += 1
            if empty >= _MAX_EMPTY_EPISODES:
                reasons = env.sim.reject_reasons if env.sim is not None else {}
                raise NoDecisionsError(
                    f"no request of {empty} training episodes in a row could be placed on any "
                    f"node (rejected for: {', '.join(sorted(reasons)) or 'no reason given'})"
                )
            continue
        empty = 0
        rewards: list[float] = []
        done = False
        while not done and len(actions) < steps:
            action = env.teacher_action()
            obs_list.append(obs)
            masks.append(env.action_masks())
            actions.append(action)
            obs, reward, terminated, truncated, _ = env.step(action)
            rewards.append(reward)
            done = terminated or truncated
            if progress is not None:
                progress(1)
        # Discounted returns within the episode; a truncated tail is left unbootstrapped,
        # which only biases the last ~1/(1-gamma) steps of each episode.
        running = 0.0
        tail: list[float] = []
        for reward in reversed(rewards):
            running = reward + gamma * running
            tail.append(running)
        returns.extend(reversed(tail))
    return Demonstrations(
        obs=np.stack(obs_list),
        masks=np.stack(masks),
        actions=np.array(actions, dtype=np.int64),
        returns=np.array(returns, dtype=np.float32),
    )


def fit_normalisation(demos: Demonstrations) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and standard deviation over the valid rows (one statistic per column,
    never per row slot)."""
    width = demos.obs.shape[-1] - 1
    rows = demos.obs[demos.masks][:, :width].astype(np.float64)
    shift = rows.mean(axis=0)
    scale = rows.std(axis=0)
    scale[scale < _MIN_SCALE] = 1.0
    return shift.astype(np.float32), scale.astype(np.float32)


def clone(
    policy: DeepSetsPolicy,
    demos: Demonstrations,
    *,
    epochs: int,
    batch_size: int = 256,
    lr: float = 1e-3,
    seed: int = 0,
) -> dict[str, float]:
    """Fit the actor to the teacher's actions and the critic to the returns; returns the
    final epoch's cross-entropy, teacher agreement and value loss. Invalid rows need no
    special care: the actor's logits are already -1e8 there (the validity column)."""
    generator = torch.Generator().manual_seed(seed)
    obs = torch.as_tensor(demos.obs)
    actions = torch.as_tensor(demos.actions)
    returns = torch.as_tensor(demos.returns).unsqueeze(-1)
    net = policy.deep_sets
    params = list(net.parameters()) + list(policy.value_net.parameters())
    optimizer = torch.optim.Adam(params, lr=lr)
    cross_entropy = nn.CrossEntropyLoss()
    n = len(actions)
    metrics: dict[str, float] = {}
    for _ in range(epochs):
        order = torch.randperm(n, generator=generator)
        totals = np.zeros(3)
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            logits = net.forward_actor(obs[idx])
            policy_loss = cross_entropy(logits, actions[idx])
            value = policy.value_net(net.forward_critic(obs[idx]))
            value_loss = nn.functional.mse_loss(value, returns[idx])
            optimizer.zero_grad()
            (policy_loss + 0.5 * value_loss).backward()
            optimizer.step()
            agree = (logits.argmax(dim=-1) == actions[idx]).float().mean()
            totals += len(idx) * np.array(
                [policy_loss.item(), agree.item(), value_loss.item()], dtype=np.float64
            )
        ce, agreement, vloss = totals / n
        metrics = {"bc_cross_entropy": ce, "bc_agreement": agreement, "bc_value_loss": vloss}
    return metrics
