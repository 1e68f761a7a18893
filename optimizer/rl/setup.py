"""Phase 1 of `optimizer.rl.train.train`: check and load the fleets,
build the vector environment (one `PlacementEnv` per fleet, `MultiFleetEnv` drawing one per
episode) and MaskablePPO, and decide which decision cost weights validation tries."""

from __future__ import annotations

from collections.abc import Callable

from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import DummyVecEnv

from optimizer.arrivals import draw_requests
from optimizer.decide.registry import resolve_policy_dir
from optimizer.decide.scorers.learned import load_trained_policy
from optimizer.errors import InputFileError
from optimizer.rl.config import ProgressFn, TrainConfig
from optimizer.rl.env import PlacementEnv
from optimizer.rl.export import load_weights
from optimizer.rl.fleets import MultiFleetEnv
from optimizer.rl.network import DeepSetsPolicy
from optimizer.rl.replays import MapFn
from optimizer.rl.run import Run
from optimizer.rl.scenarios import ScenarioConfig
from optimizer.rl.teacher import TEACHER_NAMES, get_teacher
from optimizer.sim import Simulator
from optimizer.topology import Topology


def unservable(config: TrainConfig, path: str, detail: str) -> InputFileError:
    """The error for a fleet on which training can take no decision (imitation raises it too)."""
    return InputFileError(
        path,
        [
            f"{path}: cannot train on {config.trace}: {detail}; check the nodes' models and "
            "states, the links, and the residency of the sources' SLOs"
        ],
    )


def _check_servable(config: TrainConfig, path: str, topology: Topology, trace: list) -> None:
    """Refuse at once a fleet on which none of the trace's first `window` requests has a
    candidate node: training would see no decision there."""
    items = trace[: config.window]
    requests = draw_requests(items, topology, config.seed)
    sim = Simulator(
        topology, get_teacher(config.teacher, topology), requests, [r.arrival_s for r in items]
    )
    if any(sim.candidates(rid) for rid in range(len(requests))):
        return
    reasons = ", ".join(sorted(sim.reject_reasons))
    raise unservable(
        config, path, f"no node can serve any of its first {len(requests)} requests ({reasons})"
    )


def setup(config: TrainConfig, progress: ProgressFn | None, map_replays: MapFn) -> Run:
    """Load the fleets, build the vector environment and MaskablePPO (seeded by `config.seed`,
    as `optimizer.rl.train.seed_everything` seeded the libraries before)."""
    if config.teacher not in TEACHER_NAMES:
        raise ValueError(f"unknown teacher {config.teacher!r}; one of {', '.join(TEACHER_NAMES)}")
    low, high = config.prompt_scale
    if not 0 < low <= high:
        raise ValueError(f"prompt_scale must be 0 < LOW <= HIGH, got {low:g} {high:g}")
    init_dir = resolve_policy_dir(config.init) if config.init else None
    if init_dir is not None:
        config.hidden = int(load_weights(init_dir)["hidden"])
    inherited = 0.0 if init_dir is None else load_trained_policy(init_dir).cost_weight
    fixed = config.decision_cost_weight
    run = Run(config, progress, map_replays)
    run.cost_weights = (fixed,) if fixed is not None else tuple(dict.fromkeys((inherited, 0.0)))
    (run.out / "checkpoints").mkdir(parents=True, exist_ok=True)
    for path, topology in zip(run.paths, run.fleets, strict=True):
        _check_servable(config, path, topology, run.trace)
    scenarios = ScenarioConfig(
        window=config.window,
        utilisation=config.utilisation,
        prompt_scale=config.prompt_scale,
        telemetry_interval_s=config.telemetry_interval_s,
    )
    rows = max(len(t.nodes) for t in run.fleets)

    def make_env(rank: int) -> Callable[[], PlacementEnv | MultiFleetEnv]:
        def build() -> PlacementEnv | MultiFleetEnv:
            envs = [
                PlacementEnv(
                    topology,
                    run.trace,
                    scenarios=scenarios,
                    reward=config.reward,
                    teacher=config.teacher,
                    max_nodes=rows,
                )
                for topology in run.fleets
            ]
            env: PlacementEnv | MultiFleetEnv = envs[0] if len(envs) == 1 else MultiFleetEnv(envs)
            env.reset(seed=config.seed * 1000 + rank)
            return env

        return build

    venv = DummyVecEnv([make_env(i) for i in range(config.n_envs)])
    venv.seed(config.seed)
    run.model = MaskablePPO(
        DeepSetsPolicy,
        venv,
        learning_rate=config.learning_rate,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        policy_kwargs={"hidden": config.hidden},
        seed=config.seed,
        device="cpu",
        verbose=0,
    )
    policy = run.model.policy
    assert isinstance(policy, DeepSetsPolicy)
    run.policy = policy
    run.demo_env = make_env(10_000)()
    return run
