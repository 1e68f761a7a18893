"""Phase 3 of `optimizer.rl.train.train`: the warm start. The actor starts from `--init`'s
weights, or clones the teacher (`optimizer.rl.imitation`: demonstrations, normalisation,
behaviour cloning), so that PPO starts at the teacher rather than below it; the start is then
validated, and is the best weights until PPO validates better.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optimizer.decide.registry import resolve_policy_dir
from optimizer.rl.export import load_weights
from optimizer.rl.imitation import NoDecisionsError, clone, collect, fit_normalisation
from optimizer.rl.run import Best, Run
from optimizer.rl.setup import unservable
from optimizer.rl.validation import actor_state, report_validation, validate_start


def imitate(run: Run) -> None:
    """Warm start: load `--init`'s weights, or clone the teacher; then validate the start."""
    c = run.config
    deep_sets = run.policy.deep_sets

    def demonstrations(steps: int, tick: Callable[[int], None] | None = None) -> Any:
        try:
            return collect(run.demo_env, steps, c.seed + 20_000, c.gamma, tick)
        except NoDecisionsError as exc:
            raise unservable(c, c.topology, str(exc)) from exc

    metrics: dict[str, Any] = {}
    if c.init:
        weights = load_weights(resolve_policy_dir(c.init))
        deep_sets.actor.load_state_dict(weights["actor"])
        deep_sets.critic.load_state_dict(weights["critic"])
        run.policy.value_net.load_state_dict(weights["value_net"])
        source = f"init:{c.init}"
    elif c.bc_steps:
        count = [0]

        def tick(n: int) -> None:
            count[0] += n
            if count[0] % 4096 == 0:
                run.report("imitate", 0.8 * count[0] / c.bc_steps, {"collected": count[0]})

        demos = demonstrations(c.bc_steps, tick)
        deep_sets.set_normalisation(*fit_normalisation(demos))
        metrics = clone(run.policy, demos, epochs=c.bc_epochs, seed=c.seed)
        source = "imitation"
    else:
        deep_sets.set_normalisation(*fit_normalisation(demonstrations(4096)))
        source = "init"
    start = validate_start(run)
    run.start = start
    run.best = Best(start, actor_state(run.policy), source)
    run.record["imitation"] = metrics
    report_validation(run, start | {"bc_agreement": metrics.get("bc_agreement", 0.0)}, 0, True)
