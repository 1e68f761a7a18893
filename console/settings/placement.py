"""The decision engine (console.placement.engine): its policies, snapshot, split stage,
recorder, shared live view and breakers. docs/settings.md, "Decisions"."""

from __future__ import annotations

from console.settings.environment import REDIS_URL, VAR_DIR, env

# The policy that serves when no policy version is active, and the heuristic the engine falls
# back to when a scorer fails or is slow.
LOCUS_DEFAULT_POLICY: str = env.str("LOCUS_DEFAULT_POLICY", default="weighted-score")
LOCUS_FALLBACK_POLICY: str = env.str("LOCUS_FALLBACK_POLICY", default="least-loaded")
LOCUS_SNAPSHOT_REFRESH_SECONDS: float = env.float("LOCUS_SNAPSHOT_REFRESH_SECONDS", default=1.0)
LOCUS_MAX_FALLBACKS: int = env.int("LOCUS_MAX_FALLBACKS", default=3)
# One trained-scorer decision in this many keeps why it was picked in its receipt (integrated
# gradients, ~0.17 ms each against ~0.07 ms for the decision's pipeline on 2 cores:
# tests/bench/bench_learned_why.py); 0 keeps it only for decisions asked to explain
# (console/placement/engine/learned_why.py).
LOCUS_LEARNED_EXPLAIN_EVERY: int = env.int("LOCUS_LEARNED_EXPLAIN_EVERY", default=100)
# The decision's split stage (optimizer.decide.registry SPLITTERS; "" for none): on a fleet with
# prefill or decode nodes (a fleet of mixed nodes is never split) it may answer
# a long prompt with a prefill node and a decode node (issue #30, docs/decisions.md), above
# LOCUS_SPLIT_THRESHOLD_TOKENS uncached prompt tokens.
LOCUS_SPLIT_STAGE: str = env.str("LOCUS_SPLIT_STAGE", default="pd-threshold")
LOCUS_SPLIT_THRESHOLD_TOKENS: int = env.int("LOCUS_SPLIT_THRESHOLD_TOKENS", default=1024)
# /readyz fails when decision records wait this long with nothing written (the database is gone
# or refuses them); the recorder retries with backoff up to 5 s, so a healthy one never does.
LOCUS_RECORDER_STALLED_SECONDS: float = env.float("LOCUS_RECORDER_STALLED_SECONDS", default=30.0)
LOCUS_SCORER_BUDGET_MS: float = env.float("LOCUS_SCORER_BUDGET_MS", default=2.0)
# The shared live view (docs/deploying.md, "The shared live view"): every decider process
# publishes its sends to this Redis and merges the others'. Redis when configured; "" keeps
# each process on its own view.
LOCUS_SHARED_VIEW_URL: str = env.str("LOCUS_SHARED_VIEW_URL", default=REDIS_URL)
LOCUS_SHARED_VIEW_STREAM: str = env.str("LOCUS_SHARED_VIEW_STREAM", default="locus:view:sends")
# How long sends wait to be published as one batch, and the longest a read blocks, in ms.
LOCUS_SHARED_VIEW_BATCH_MS: float = env.float("LOCUS_SHARED_VIEW_BATCH_MS", default=5.0)
# Batches the stream keeps (about: MAXLEN ~); a starting process replays up to this many.
LOCUS_SHARED_VIEW_MAXLEN: int = env.int("LOCUS_SHARED_VIEW_MAXLEN", default=20_000)
# The decision recorder's write-ahead journal (console/placement/engine/journal.py,
# docs/deploying.md "Failover"): each decider appends its records and outcomes here before it
# answers, so a killed one loses none. A directory on a local disk; "" turns the journal off.
LOCUS_RECORD_JOURNAL_DIR: str = env.str(
    "LOCUS_RECORD_JOURNAL_DIR", default=str(VAR_DIR / "record-journal")
)
# Tests turn the background threads off and refresh/flush by hand.
LOCUS_ENGINE_BACKGROUND: bool = env.bool("LOCUS_ENGINE_BACKGROUND", default=True)
# Freeze the heap once the engine serves (console/placement/engine/runtime.py `_freeze_heap`):
# full garbage collections then scan what came later, not the whole framework.
LOCUS_GC_FREEZE: bool = env.bool("LOCUS_GC_FREEZE", default=True)
LOCUS_BREAKER: dict[str, float] = {
    key: env.float(f"LOCUS_BREAKER_{key.upper()}", default=default)
    for key, default in (
        ("consecutive_failures", 5),
        ("window_s", 120.0),
        ("error_rate", 0.5),
        ("min_requests", 10),
        ("open_s", 60.0),
        ("half_open_probes", 3),
        ("close_after_successes", 3),
    )
}
