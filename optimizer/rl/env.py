"""A Gymnasium environment over the simulator: one step per arriving request.

Observation: `Box(max_nodes, N_FEATURES + 1)`, one row per candidate node from the shared
feature definition (`Candidates.rows`, the rows the live engine computes), the
candidates in the first rows and a last column of 1 for a valid row (docs/architecture.md, RL
notes). Action: `Discrete(max_nodes)`, the index of the chosen candidate; `action_masks()` marks the
valid rows for sb3-contrib's MaskablePPO (masking learns far better than penalising invalid
actions). Arrivals with no candidate at all are rejected by the simulator and never shown
(their miss is charged as in the simulator's evaluation). A sampled episode none of whose
arrivals has a candidate is drawn again, up to `RESET_DRAWS` times; if it stays empty (or a
fixed scenario is), `reset` returns an all-invalid observation and the first `step`, whatever
its action, ends the episode (`truncated=True`, reward 0).

Reward, between one decision and the next (its sum over an episode tracks what users feel):
- latency: minus the request-time spent in the system, `dt x requests in system`, in
  request-minutes; summed it is the total time requests spend in the system (Park's
  load-balancing environment, Mao et al. 2019);
- SLO misses: minus `miss_weight` for each request the moment its miss becomes certain (its
  TTFT target passes without a first token, or it finishes late, over budget, rejected or lost);
- cost: minus `cost_weight` x the dollars of each finished request x 1000 (USD per 1k).
A running average of the reward is subtracted (Decima's differential reward, Mao et al. 2019)
so the value function sees rewards centred near zero across light and heavy episodes; the
number of steps is fixed by the arrivals, so the shift leaves the ranking of policies unchanged.
Episodes end with `truncated=True` after the window's arrivals: the arrival process goes on.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from optimizer.decide.request import PlacementRequest, slo_targets_s
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.features import N_FEATURES
from optimizer.rl.scenarios import Scenario, ScenarioConfig, sample_scenario
from optimizer.rl.teacher import get_teacher
from optimizer.sim import Simulator
from optimizer.sim.requests import FAILED, REJECTED, SERVED
from optimizer.sim.telemetry import TelemetryModel
from optimizer.topology import Topology
from optimizer.traces import TraceRequest

ROW_WIDTH = N_FEATURES + 1  # features plus the validity column
RESET_DRAWS = 16
"""Scenarios `reset` draws at most to find one with a decision to take."""


@dataclass(frozen=True, slots=True)
class RewardConfig:
    """Weights of the reward's terms (see the module docstring)."""

    miss_weight: float = 1.0
    """Penalty per request that misses its SLO (or is rejected or lost)."""
    latency_weight: float = 0.05
    """Penalty per request-minute spent in the system."""
    cost_weight: float = 0.03
    """Penalty per USD-per-1k-requests of each finished request (its cost x 1000)."""
    baseline_decay: float = 1e-3
    """Step size of the running average of the reward that is subtracted (0 disables it)."""


@dataclass(slots=True)
class _Outcomes:
    """Per-request bookkeeping of what has been charged to the reward already."""

    ttft_target: list[float]
    e2e_target: list[float]
    budget: list[float]
    missed: bytearray
    opened: bytearray
    closed: bytearray
    deadlines: list[tuple[float, int]] = field(default_factory=list)
    finished_s: float = 0.0  # summed time in system of finished requests
    open_count: int = 0  # placed, not finished
    open_arrivals: float = 0.0  # sum of the arrival times of those


class PlacementEnv(gym.Env[np.ndarray, np.int64]):
    """Place each arriving request of a sampled scenario on one of its candidate nodes."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        topology: Topology,
        trace: list[TraceRequest],
        *,
        scenarios: ScenarioConfig | None = None,
        reward: RewardConfig | None = None,
        max_nodes: int | None = None,
        teacher: str = "weighted-score",
        fixed_scenario: Scenario | None = None,
    ) -> None:
        """`teacher` names the rule (`optimizer.rl.teacher`) whose choice `teacher_action`
        returns (for imitation); it also re-places requests that a failed node gives back.
        `fixed_scenario` replays one workload every episode instead of sampling (evaluation
        and tests)."""
        super().__init__()
        self.topology = topology
        self.trace = trace
        self.scenarios = scenarios or ScenarioConfig()
        self.reward_config = reward or RewardConfig()
        self.max_nodes = max_nodes or len(topology.nodes)
        if self.max_nodes < len(topology.nodes):
            raise ValueError(f"max_nodes {self.max_nodes} < {len(topology.nodes)} nodes")
        self.teacher_name = teacher
        self.fixed_scenario = fixed_scenario
        self.observation_space = spaces.Box(
            low=-np.inf, high=np.inf, shape=(self.max_nodes, ROW_WIDTH), dtype=np.float32
        )
        self.action_space = spaces.Discrete(self.max_nodes)
        self._obs = np.zeros((self.max_nodes, ROW_WIDTH), dtype=np.float32)
        self._mask = np.zeros(self.max_nodes, dtype=bool)
        self._baseline = 0.0
        self.scenario: Scenario | None = None
        self.sim: Simulator | None = None
        self._rid = -1
        self._misses = 0
        self._cost_1k = 0.0
        self._last_a = 0.0
        self._end_s = 0.0
        self._candidates: Candidates | None = None
        self._request: PlacementRequest | None = None
        self._teacher = get_teacher(teacher, topology)

    # -- Gymnasium API --------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        for _ in range(1 if self.fixed_scenario is not None else RESET_DRAWS):
            scenario = self.fixed_scenario or sample_scenario(
                self.trace, self.topology, self.scenarios, self.np_random
            )
            if self._start(scenario):
                break
        return self._observe(), self._info(0.0)

    def _start(self, scenario: Scenario) -> bool:
        """Set up a run of `scenario` and advance to its first decision; False if none."""
        self.scenario = scenario
        self._teacher = get_teacher(self.teacher_name, self.topology)
        telemetry = (
            TelemetryModel(scenario.telemetry_interval_s, seed=scenario.telemetry_seed)
            if scenario.telemetry_interval_s is not None
            else None
        )
        self.sim = Simulator(
            self.topology,
            self._teacher,
            scenario.requests,
            scenario.arrival_s,
            scenario.events,
            telemetry=telemetry,
        )
        self.sim.start()
        targets = [slo_targets_s(r, self.topology) for r in scenario.requests]
        budgets = []
        for r in scenario.requests:
            slo = self.topology.slo_by_name.get(r.slo) if r.slo is not None else None
            budgets.append(slo.max_usd_per_1k if slo and slo.max_usd_per_1k else float("inf"))
        self._out = _Outcomes(
            ttft_target=[t for t, _ in targets],
            e2e_target=[e for _, e in targets],
            budget=budgets,
            missed=bytearray(len(scenario.requests)),
            opened=bytearray(len(scenario.requests)),
            closed=bytearray(len(scenario.requests)),
        )
        self._misses = 0
        self._cost_1k = 0.0
        self._last_a = 0.0
        self._end_s = scenario.arrival_s[-1]
        return self._next_decision()

    def step(self, action: np.int64 | int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        assert self.sim is not None, "call reset() first"
        if self._request is None or self._candidates is None:
            # No decision awaits: no arrival of this episode had a candidate (see the module
            # docstring), or it has ended already. End it without placing anything.
            return self._observe(), 0.0, False, True, self._info(0.0)
        index = int(action)
        if not self._mask[index]:
            # Under masking this never happens; an unmasked sampler (check_env) gets the
            # action folded onto the candidates rather than an error.
            index %= len(self._candidates)
        self._open(self._rid)
        self.sim.send(self._rid, int(self._candidates.index[index]), self.sim.now)
        misses_before, cost_before = self._misses, self._cost_1k
        done = not self._next_decision()
        latency_min = self._latency_delta() / 60.0
        misses = self._misses - misses_before
        cost = self._cost_1k - cost_before
        cfg = self.reward_config
        raw = -(
            cfg.miss_weight * misses + cfg.latency_weight * latency_min + cfg.cost_weight * cost
        )
        self._baseline += cfg.baseline_decay * (raw - self._baseline)
        reward = raw - self._baseline if cfg.baseline_decay else raw
        return self._observe(), float(reward), False, done, self._info(raw)

    def action_masks(self) -> np.ndarray:
        """Valid actions: the rows of the current request's candidates (sb3-contrib API)."""
        return self._mask.copy()

    # -- helpers for imitation and evaluation ---------------------------------------------------
    def teacher_action(self) -> int:
        """The teacher heuristic's choice for the current request; 0 when no request awaits a
        decision (`step` then ends the episode whatever the action)."""
        if self._candidates is None or self.sim is None:
            return 0
        _, order = self.sim.pipeline.rank(self._candidates, self._teacher, 1)
        return order[0]

    @property
    def current(self) -> tuple[PlacementRequest | None, Candidates | None]:
        """The request awaiting a decision and its candidates."""
        return self._request, self._candidates

    # -- internals ------------------------------------------------------------------------------
    def _next_decision(self) -> bool:
        """Advance to the next arrival with at least one candidate; False at the window's end."""
        sim = self.sim
        assert sim is not None
        while True:
            # Stop at the window's last arrival: the backlog after it belongs to no decision.
            rid = sim.advance(until=self._end_s)
            if rid is None:
                self._settle()
                self._request, self._candidates = None, None
                self._mask[:] = False
                return False
            candidates = sim.candidates(rid)
            self._settle()
            if candidates:
                self._rid = rid
                self._request = sim.requests[rid]
                self._candidates = candidates
                return True

    def _open(self, rid: int) -> None:
        """Request `rid` enters the system: track it for the latency term and its deadline."""
        out = self._out
        assert self.sim is not None
        arrival = self.sim.table.arrival[rid]
        out.opened[rid] = 1
        out.open_count += 1
        out.open_arrivals += arrival
        heapq.heappush(out.deadlines, (arrival + out.ttft_target[rid], rid))

    def _close(self, rid: int, time_in_system: float) -> None:
        """Request `rid` left the system (finished, lost or rejected on re-placement)."""
        out = self._out
        if out.opened[rid] and not out.closed[rid]:
            out.closed[rid] = 1
            out.open_count -= 1
            out.open_arrivals -= self.sim.table.arrival[rid] if self.sim else 0.0
            out.finished_s += time_in_system

    def _miss(self, rid: int) -> None:
        if not self._out.missed[rid]:
            self._out.missed[rid] = 1
            self._misses += 1

    def _settle(self) -> None:
        """Charge the outcomes that became known since the last call."""
        sim = self.sim
        assert sim is not None
        table, out, now = sim.table, self._out, sim.now
        # A request can appear twice (first token, then finish) in one interval: it is closed
        # once, when its status is final.
        for rid in table.resolved:
            status = table.status[rid]
            if status == SERVED:
                if out.closed[rid]:
                    continue
                self._close(rid, table.e2e[rid])
                cost_1k = table.cost[rid] * 1000.0
                self._cost_1k += cost_1k
                if (
                    table.ttft[rid] > out.ttft_target[rid]
                    or table.e2e[rid] > out.e2e_target[rid]
                    or cost_1k > out.budget[rid]
                ):
                    self._miss(rid)
            elif status in (REJECTED, FAILED):
                self._close(rid, now - table.arrival[rid])
                self._miss(rid)
            elif table.ttft[rid] > out.ttft_target[rid]:
                self._miss(rid)
        table.resolved.clear()
        deadlines = out.deadlines
        while deadlines and deadlines[0][0] < now:
            _, rid = heapq.heappop(deadlines)
            if table.ttft[rid] == 0.0 and table.status[rid] != SERVED:
                self._miss(rid)

    def _latency_delta(self) -> float:
        """Request-seconds spent in the system since the last call: the change of
        A(t) = finished time in system + sum over open requests of (t - arrival)."""
        out = self._out
        assert self.sim is not None
        a = out.finished_s + out.open_count * self.sim.now - out.open_arrivals
        delta = a - self._last_a
        self._last_a = a
        return delta

    def _observe(self) -> np.ndarray:
        obs = self._obs
        obs.fill(0.0)
        self._mask[:] = False
        n = len(self._candidates) if self._candidates is not None else 0
        if n:
            assert self._candidates is not None
            obs[:n, :N_FEATURES] = self._candidates.rows()
            obs[:n, N_FEATURES] = 1.0
            self._mask[:n] = True
        return obs.copy()

    def _info(self, raw_reward: float) -> dict[str, Any]:
        return {"misses": self._misses, "raw_reward": raw_reward}
