"""The serving tables of docs/results/: the decision-speed page (one decision in process, a
split decision, explaining a learned decision, the decision API over HTTP) and the scale-out
page (the shared live view's staleness, the endpoint picker's throughput by process count).
Kept apart from tools/results/registry.py, which lists them after its own."""

from __future__ import annotations

from tools.results.model import Page, Table
from tools.results.render import decision_latency
from tools.results.serving import (
    decision_api,
    large_body,
    learned_why,
    live_deciders,
    picker_scale_out,
    receipts,
    router_overhead,
    shared_view,
)

SHARED_MACHINE = (
    "Measured on a 2-core machine shared with other work, the load generator on the same "
    "cores: throughput and tail latency are low and noisy, and the server's CPU time per "
    "decision is the steadier figure."
)

PAGES = (
    Page(
        "scale-out",
        "Several decider processes",
        "What sharing the live view through Redis costs in staleness, and what the endpoint "
        "picker decides with one, two or four processes, the view shared or not "
        "([several deciders](../deploying.md#several-deciders-what-is-lost-without-a-shared-"
        "view), [the shared live view](../deploying.md#the-shared-live-view)).",
    ),
)

TABLES = (
    Table(
        slug="bench-decide",
        page="decision-speed",
        title="One decision, by policy and fleet size",
        about=(
            "CPU time of one decision (hard constraints, scores, the pick and its fallbacks) "
            "for 8 to 1,000 candidate nodes, in one process on one thread, for every built-in "
            "heuristic and the generalist. Each decision path the JSON reports is a row: "
            "`kernel` is the vectorised decision code that serves, `reference` the per-node "
            "code kept as its test oracle. Measured on a 2-core machine shared with other work."
        ),
        script="""\
mkdir -p docs/results/reports/bench-decide
.venv/bin/python -m optimizer bench-decide --topology optimizer/topologies/fleet-demo.yaml \\
  --policy generalist --cpu-time --repeats 500 --json \\
  > docs/results/reports/bench-decide/fleet-demo.json""",
        render=decision_latency,
    ),
    Table(
        slug="bench-decide-pd",
        page="decision-speed",
        title="A split decision beside a one-node decision, on P/D pools",
        about=(
            "`bench-decide --split pd-threshold` on copies of the P/D fleet's nodes (their roles "
            "kept) for 8 to 1,000 candidates: `kernel` is the one-node decision (the roles "
            "filter runs), `split` the same pipeline ending with the split stage on an "
            "8,000-token prompt, which prices every prefill and decode node (on these random "
            "states it keeps the one-node answer at 8 candidates and splits from 64; the work "
            "is the same either way), `reference` the per-node oracle. CPU time, on a 2-core "
            "machine shared with other work. Pools of at most 16 nodes are priced in Python "
            "floats, larger ones in numpy columns (`optimizer/decide/pickers/split_pool.py`). "
            "A split costs about what the estimates of every node of the pool cost, which a "
            "one-node decision pays (on the mixed nodes) only when its policy reads them: at "
            "1,000 candidates the split's p99 is 5 to 7 times the one-node decision's for "
            "random, round-robin and least-loaded, which read none, and about twice it "
            "(1.7 to 2.2 times in this run) for the others (issue #30)."
        ),
        script="""\
mkdir -p docs/results/reports/bench-decide-pd
.venv/bin/python -m optimizer bench-decide --topology optimizer/topologies/pd-two-regions.yaml \\
  --split pd-threshold --cpu-time --repeats 300 --json \\
  > docs/results/reports/bench-decide-pd/pd-two-regions.json""",
        render=decision_latency,
    ),
    Table(
        slug="learned-why",
        page="decision-speed",
        title="Explaining a learned decision",
        about=(
            "The shipped generalist's decision through the pipeline against its attribution "
            "(`pick_attribution`: integrated gradients, 32 steps, "
            "`optimizer/decide/explain_learned.py`) on the same candidates, for each model of "
            "the demo fleet, idle nodes, in process. The attribution runs only for decisions "
            'sent with `"explain": true` and one in `LOCUS_LEARNED_EXPLAIN_EVERY` of the others '
            "([receipts](../dashboard.md#receipts-why-a-decision-went-where-it-did)). "
            + SHARED_MACHINE
        ),
        script="""\
mkdir -p docs/results/reports/learned-why
nice .venv/bin/python tests/bench/bench_learned_why.py \\
  --json docs/results/reports/learned-why/fleet-demo.json""",
        render=learned_why,
    ),
    Table(
        slug="receipts",
        page="decision-speed",
        title="What a decision's receipt costs",
        about=(
            "The engine's `decide` plus `receipt_of` in process on the demo fleet (a scratch "
            "SQLite database, no server), the top candidates estimated for the receipt as every "
            "decision does, against none, alternating in the same run, 3,000 decisions a side "
            "per round. " + SHARED_MACHINE
        ),
        script="""\
mkdir -p docs/results/reports/receipts
nice .venv/bin/python tests/bench/bench_receipts.py \\
  --json docs/results/reports/receipts/fleet-demo.json""",
        render=receipts,
    ),
    Table(
        slug="decision-api",
        page="decision-speed",
        title="The decision API over HTTP",
        about=(
            "`POST /api/v1/placements` and `POST /api/v1/placements:batch` (100 requests a "
            "call) on one uvicorn worker, driven by `hey`, beside a raw ASGI app answering a "
            "constant JSON body under the same server and load (the limit any endpoint can "
            "reach) and a server whose engine costs nothing (`tests/bench/free_engine.py`: the "
            "most any faster engine could give). The demo fleet, SQLite. " + SHARED_MACHINE
        ),
        script="""\
mkdir -p docs/results/reports/decision-api
DATABASE_URL= REDIS_URL= nice .venv/bin/python tests/bench/bench_decisions.py --seconds 8 \\
  --floor --json docs/results/reports/decision-api/fleet-demo.json""",
        render=decision_api,
    ),
    Table(
        slug="shared-view",
        page="scale-out",
        title="The shared view's staleness",
        about=(
            "Publish-to-visible delay of a send through the shared view: one publisher process "
            "at 500 sends/s for 10 s, one or three reader processes on the same stream, each "
            "noting the wall clock minus the send's stamp as it merges it (one host, so no "
            "clock skew), local Redis, 5 ms batches. No engine decides: the figure is the "
            "transport's. " + SHARED_MACHINE
        ),
        script="""\
mkdir -p docs/results/reports/shared-view
for r in 1 3; do
  REDIS_URL=redis://127.0.0.1:6379/11 nice .venv/bin/python tests/bench/bench_sharedview.py \\
    --readers $r --json > docs/results/reports/shared-view/readers-$r.json
done""",
        render=shared_view,
    ),
    Table(
        slug="picker-scale-out",
        page="scale-out",
        title="The endpoint picker by process count",
        about=(
            "The ext_proc request path (`run_picker --processes N`) on the demo fleet, 16 "
            "concurrent streams from 2 client processes on the same 2 cores, 5 s per run, the "
            "live view shared through Redis or not. " + SHARED_MACHINE
        ),
        script="""\
mkdir -p docs/results/reports/picker-scale-out/
R=docs/results/reports/picker-scale-out
for n in 1 2 4; do
  REDIS_URL= LOCUS_SHARED_VIEW_URL= nice .venv/bin/python tests/bench/bench_picker.py \\
    --runs picker --processes $n --seconds 5 --json $R/p$n-own.json
  REDIS_URL= LOCUS_SHARED_VIEW_URL=redis://127.0.0.1:6379/11 nice .venv/bin/python \\
    tests/bench/bench_picker.py --runs picker --processes $n --seconds 5 --json $R/p$n-shared.json
done""",
        render=picker_scale_out,
    ),
    Table(
        slug="live-deciders",
        page="scale-out",
        title="Four routers sharing the live view against one, live",
        about=(
            "`tests/bench/bench_live_deciders.py` (issue #29): the demo fleet emulated "
            "(`serve-fleet`), PostgreSQL and Redis, `run_router --processes 1` then `--processes "
            "4` with weighted-score and the shared live view, each on a fresh fleet, database "
            "and Redis, a scraper reading every node once a second; the same open-loop replay of "
            "the Mooncake trace at utilisation 0.5 (seed 0) with the OpenAI client. The 5-minute "
            "run adds 4 processes with the view off as a control. Issue #29's goals: 4 "
            "processes within 1 point of 1, and a decision p99 within 10% of it. The emulated "
            "fleet, the scraper, the client and other people's work run on the same 2 cores as "
            "the routers (the load average before each run is in the table). " + SHARED_MACHINE
        ),
        script="""\
mkdir -p docs/results/reports/live-deciders/
R=docs/results/reports/live-deciders/
nice .venv/bin/python tests/bench/bench_live_deciders.py --minutes 5 --processes 1,4,4own \\
  --port-base 28100 --json ${R}fleet-demo-5min.json
nice .venv/bin/python tests/bench/bench_live_deciders.py --minutes 10 --processes 1,4 \\
  --port-base 28100 --json ${R}fleet-demo-10min.json""",
        render=live_deciders,
    ),
    Table(
        slug="router-overhead",
        page="routers",
        title="What the router adds to a call's time to first token",
        about=(
            "`tests/bench/bench_router.py`: the single-site benchmark fleet (10 emulated nodes "
            "in one `serve-fleet` process), `run_router` with `weighted-score` and its scraper, "
            "the client in a third process; 300 probe pairs a run (one 1-token streamed call "
            "through the router, then the same-sized call straight to the node it picked, "
            "200-token unique prompts), without and with a background load of streamed "
            "2,000-token calls through the router. " + SHARED_MACHINE + " Every process waits "
            "for a core there, so the p99s are mostly that wait (the direct calls' own p99 "
            "moves as much)."
        ),
        script="""\
mkdir -p docs/results/reports/router-overhead
for r in 0 20; do
  nice .venv/bin/python tests/bench/bench_router.py --probes 300 --rate $r --port-base 19300 \\
    --json > docs/results/reports/router-overhead/rate-$r.json
done""",
        render=router_overhead,
    ),
    Table(
        slug="large-body",
        page="routers",
        title="A large body: 100,000-token prompts through the router and the picker",
        about=(
            "`tests/bench/bench_large_body.py`: prompts of 55,000 and 100,000 tokens (bodies of "
            "~220 KB and ~400 KB: 4 characters a token, the rule `optimizer/prompts.py` and the "
            "emulated nodes count with), every call's prompt its own, streamed "
            "`/v1/completions` with one token out. Router: `run_router` (weighted-score, its "
            "scraper beside it) before an instant emulated fleet (4 `serve-fleet` nodes whose "
            "prefill and decode take almost nothing, the part `llm-d-inference-sim` plays in "
            "llm-d's figure) against the same calls straight to the nodes: closed loops of 5 s "
            "at 1, 8 and 32 concurrent calls, and 30 probe pairs one at a time (through the "
            "router, then straight to the node it picked); every answer's "
            "`usage.prompt_tokens` must equal the size sent. Picker: `run_picker` (one "
            "process, the demo fleet) driven as Envoy drives it with `request_body_mode: "
            "FULL_DUPLEX_STREAMED`, the body in 32 KiB chunks (llm-d's EPP counted ~7 chunks "
            "a 220 KB body), at 1 and 8 concurrent streams. " + SHARED_MACHINE + " Here the "
            "router, the fleet, the scraper and the client share those 2 cores, so req/s is "
            "the machine's, not the router's alone. Limits, at the defaults (16 MiB): a body of "
            "exactly the limit gets past each door's size check; the router places and forwards "
            "it and the emulated node refuses it (its own limit is 8 MiB), the picker places it "
            "and no node has KV room for its 4 million tokens.\n\n"
            "llm-d's published envelope, for comparison (llm-d/llm-d-router issue #1109, "
            "2026-05-14: ~220 KB prompts, streamed `/v1/completions`, an Istio gateway and "
            "llm-d's endpoint picker before `llm-d-inference-sim` pods on a KIND host; the "
            "follow-up issue #1110 on the same harness lists 24 CPUs and the v0.8.0 picker "
            'image): throughput "plateaus around ~128-132 req/s while TTFT keeps growing '
            'with concurrency": TTFT p50 152.62 ms at 121.74 req/s with 20 concurrent '
            "requests, 442.48 ms at 132.32 req/s with 60, 1516.71 ms at 129.16 req/s with 200 "
            "(measured at the client, through gateway and picker together)."
        ),
        script="""\
mkdir -p docs/results/reports/large-body
nice .venv/bin/python tests/bench/bench_large_body.py \\
  --json docs/results/reports/large-body/instant-fleet.json""",
        render=large_body,
    ),
)
