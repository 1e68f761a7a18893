"""What `bench_live_deciders.py` reads from a run's database once its routers have stopped
(their recorders written out), in the run's Django environment:

    python tests/bench/routers/outcomes.py SINCE_UNIX

SLO attainment is the canary's figure, read by the canary's own selector
(`console.policies.canary.arm_stats`, what `GET /api/v1/rollout` reports per arm): the share of
decisions since SINCE_UNIX whose outcome met every target of their SLO. The decision time is
each record's `latency_us` (the engine's wall time for the decision, taken in `Engine.decide`,
the engine's lock included), exact per decision where the router's histogram has buckets.
Prints one JSON object.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import UTC, datetime

import django
import numpy as np


def main() -> None:
    since = datetime.fromtimestamp(float(sys.argv[1]), tz=UTC)
    django.setup()
    # Imported only now: they need Django set up.
    from console.placement.models import DecisionRecord
    from console.policies.canary import arm_stats

    arms = {
        arm: {"outcomes": s.outcomes, "met": s.met, "slo_attainment": s.attainment}
        for arm, s in arm_stats(since).items()
    }
    rows = DecisionRecord.objects.filter(created_at__gte=since).values_list("latency_us", "node")
    latency = [float(us) for us, _ in rows]
    qs = (50, 90, 99)
    pcts = np.percentile(latency, qs) if latency else [0.0] * len(qs)
    print(
        json.dumps(
            {
                "since_unix": float(sys.argv[1]),
                "arms": arms,
                "decisions": len(latency),
                "latency_us": {f"p{q}": round(float(v), 1) for q, v in zip(qs, pcts, strict=True)}
                | {"mean": round(float(np.mean(latency)), 1) if latency else 0.0},
                "nodes": dict(Counter(node for _, node in rows).most_common()),
            }
        )
    )


if __name__ == "__main__":
    main()
