"""A permutation-equivariant per-candidate actor-critic for MaskablePPO (Deep Sets).

Each candidate row goes through one shared MLP; a pooled context (masked mean and max over the
valid rows) is appended to every row, and a second shared MLP gives one logit per row. The
value is an MLP over a separately pooled encoding. No weight depends on the number of rows, so
logits follow any reordering of the candidates and one policy serves fleets of any size
(Zaheer et al. 2017, "Deep Sets"; Decima's per-node scorer, Mao et al. 2019).

Inputs are normalised per feature column with fixed statistics held as buffers (never per row
slot, which would break permutation invariance; docs/architecture.md, RL notes), and the export
bakes them in.

SB3 builds the optimizer inside `_build`, so `DeepSetsPolicy` overrides `_build` to create its
own modules first and then the optimizer over all of them (SB3 docs, "Custom Policy Network";
docs/architecture.md: replacing `action_net` after construction leaves it out of the optimizer).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import Schedule
from torch import nn

from optimizer.decide.state.features import N_FEATURES

# Stands in for -inf on masked rows inside the network: finite, so the pooled max and the
# gradients stay finite; MaskableDistribution masks the logits again on its own.
_NEG = -1e8  # literal copies below: TorchScript cannot read module globals


class RowsExtractor(BaseFeaturesExtractor):
    """Passes the (batch, rows, features + 1) observation through unchanged: the per-row
    network below does all the work, where SB3's default would flatten the rows."""

    def __init__(self, observation_space: spaces.Box) -> None:
        super().__init__(observation_space, features_dim=int(np.prod(observation_space.shape)))

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return observations


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


def masked_pool(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Concatenated mean and max of `h` (batch, rows, d) over the rows where `mask` is true."""
    m = mask.unsqueeze(-1).to(h.dtype)
    count = m.sum(dim=1).clamp(min=1.0)
    mean = (h * m).sum(dim=1) / count
    big = torch.full_like(h, -1e8)
    top = torch.where(mask.unsqueeze(-1), h, big).max(dim=1).values
    top = torch.where(mask.any(dim=1, keepdim=True), top, torch.zeros_like(top))
    return torch.cat([mean, top], dim=-1)


class CandidateScorer(nn.Module):
    """The actor path: normalised rows and a mask to one logit per row (masked rows `_NEG`).

    The same module is the exported scorer's core, so training and serving share one forward.
    """

    def __init__(self, n_features: int = N_FEATURES, hidden: int = 64) -> None:
        super().__init__()
        self.n_features = n_features
        self.hidden = hidden
        self.register_buffer("shift", torch.zeros(n_features))
        self.register_buffer("scale", torch.ones(n_features))
        self.encode = _mlp([n_features, hidden, hidden])
        self.head = _mlp([3 * hidden, hidden, 1])

    def forward(self, rows: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = (rows - self.shift) / self.scale  # type: ignore[operator]
        h = torch.tanh(self.encode(x))
        context = masked_pool(h, mask)
        joined = torch.cat([h, context.unsqueeze(1).expand(-1, h.shape[1], -1)], dim=-1)
        logits = self.head(joined).squeeze(-1)
        return torch.where(mask, logits, torch.full_like(logits, -1e8))


class CandidateCritic(nn.Module):
    """The value path: its own row encoder, pooled, then an MLP to `hidden` latent units."""

    def __init__(self, n_features: int = N_FEATURES, hidden: int = 64) -> None:
        super().__init__()
        self.register_buffer("shift", torch.zeros(n_features))
        self.register_buffer("scale", torch.ones(n_features))
        self.encode = _mlp([n_features, hidden, hidden])
        self.body = _mlp([2 * hidden, hidden, hidden])

    def forward(self, rows: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = (rows - self.shift) / self.scale  # type: ignore[operator]
        h = torch.tanh(self.encode(x))
        return torch.tanh(self.body(masked_pool(h, mask)))


class DeepSetsExtractor(nn.Module):
    """SB3's `mlp_extractor` slot: splits the observation into rows and validity mask and
    returns (logits, value latent); `latent_dim_pi` is the number of rows because the
    actor's latent already is the logits (the action head is the identity)."""

    actor: CandidateScorer
    critic: CandidateCritic

    def __init__(self, rows: int, n_features: int, hidden: int) -> None:
        super().__init__()
        self.n_features = n_features
        self.actor = CandidateScorer(n_features, hidden)
        self.critic = CandidateCritic(n_features, hidden)
        self.latent_dim_pi = rows
        self.latent_dim_vf = hidden

    def _split(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return obs[..., : self.n_features], obs[..., self.n_features] > 0.5

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return self.actor(*self._split(features))

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.critic(*self._split(features))

    def set_normalisation(self, shift: np.ndarray, scale: np.ndarray) -> None:
        """Fix the per-feature normalisation of both paths (from training rows)."""
        for module in (self.actor, self.critic):
            module.get_buffer("shift").copy_(torch.as_tensor(shift, dtype=torch.float32))
            module.get_buffer("scale").copy_(torch.as_tensor(scale, dtype=torch.float32))


class DeepSetsPolicy(MaskableActorCriticPolicy):
    """MaskableActorCriticPolicy with the Deep Sets actor-critic; pass `hidden` in
    `policy_kwargs` (default 64)."""

    def __init__(self, *args: Any, hidden: int = 64, **kwargs: Any) -> None:
        self.hidden = hidden
        kwargs.setdefault("features_extractor_class", RowsExtractor)
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule: Schedule) -> None:
        shape = self.observation_space.shape
        assert shape is not None and len(shape) == 2
        self.mlp_extractor = DeepSetsExtractor(shape[0], shape[1] - 1, self.hidden)  # type: ignore[assignment]
        self.action_net = nn.Identity()
        self.value_net = nn.Linear(self.hidden, 1)
        # Small final layers, as SB3's orthogonal init does for its heads (gain 0.01 policy,
        # 1 value): the warm start then begins from near-uniform choices.
        head = self.deep_sets.actor.head[-1]
        assert isinstance(head, nn.Linear)
        nn.init.orthogonal_(head.weight, gain=0.01)
        nn.init.zeros_(head.bias)
        self.optimizer = self.optimizer_class(
            self.parameters(),
            lr=lr_schedule(1),  # type: ignore[call-arg]
            **self.optimizer_kwargs,
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["hidden"] = self.hidden
        return data

    @property
    def deep_sets(self) -> DeepSetsExtractor:
        """The Deep Sets modules (typed access to `mlp_extractor`)."""
        assert isinstance(self.mlp_extractor, DeepSetsExtractor)
        return self.mlp_extractor
