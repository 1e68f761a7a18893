"""The prefill/decode tables of docs/results/prefill-decode.md (issue #30): the split against
one-node placement on pd-two-regions.yaml, the same on its DistServe-sized roles, and what
prefill-decode interference costs one-node placement (the bound on a split's TTFT gain).
Kept apart from tools/results/registry.py, which lists them after its own."""

from __future__ import annotations

from tools.results.model import Table
from tools.results.pd import pd_interference, pd_split

TABLES = (
    Table(
        slug="pd-split",
        page="prefill-decode",
        title="Split against one-node placement on a P/D fleet",
        about=(
            "`optimizer/topologies/pd-two-regions.yaml` (two regions, each a core with prefill "
            "and decode pools and two edge sites), the first 2,000 requests of the Mooncake "
            "trace (mean prompt 15,325 tokens) at 0.7 and 1.2 of the fleet's serving capacity, "
            "node state seen through telemetry 10 s apart, three seeds, means over the seeds. "
            "Split arms honour the roles and use weighted-score for one-node answers; "
            '"one node, roles honoured" is the same fleet without a split stage (its prefill '
            'and decode pools idle); "mixed-only best" is the best of five heuristics '
            "(weighted-score, prefix-aware, kv-aware, least-loaded, latency-first) on the same "
            "hardware with every node mixed (`--all-mixed`), the row the p95 column compares "
            "with. Every arm runs with chunked prefill at vLLM's default token budgets "
            "(`--chunked-prefill`: 8,192 tokens a step per H100, 2,048 per L4), so nodes that "
            "run both phases pay the prefill-decode interference "
            "([the node model](../simulation.md#prefill-decode-interference-chunked-prefill)); "
            "one-phase nodes do not."
        ),
        script="""\
mkdir -p docs/results/reports/pd-split
nice .venv/bin/python -m tools.pd_grid --seeds 0,1,2 --limit 2000 --utilisations 0.7,1.2 \\
  --telemetry-interval 10 --out docs/results/reports/pd-split/grid.json""",
        render=pd_split,
    ),
    Table(
        slug="pd-split-sized",
        page="prefill-decode",
        title="The same on a P/D fleet sized for the trace",
        about=(
            "`optimizer/topologies/pd-two-regions-sized.yaml`: the same hardware, sites, "
            "links, sources and SLOs as above, its roles reassigned as DistServe sizes its "
            "pools (Zhong et al., OSDI'24, §4: decode GPUs in proportion to the decode work "
            "per request, `python -m tools.pd_size`, `optimizer.pd_sizing`), computed from the "
            "2,000 requests' token statistics and the profiles before any replay on it: one "
            "decode H100 per core instead of the two-GPU node, which now runs both phases, "
            "and the edges' decode L4s as they were (the sizing asks for two per region). "
            "Everything else as above; the all-mixed arms replay the same fleet (node names "
            "and order kept), so their figures are those of the table above."
        ),
        script="""\
mkdir -p docs/results/reports/pd-split-sized
nice .venv/bin/python -m tools.pd_grid --fleet optimizer/topologies/pd-two-regions-sized.yaml \\
  --seeds 0,1,2 --limit 2000 --utilisations 0.7,1.2 --telemetry-interval 10 \\
  --out docs/results/reports/pd-split-sized/grid.json""",
        render=pd_split,
    ),
    Table(
        slug="pd-interference",
        page="prefill-decode",
        title="What interference costs one-node placement: the bound on a split's TTFT gain",
        about=(
            "A split removes only the prefill-decode interference from a prefill; it cannot "
            "make one faster. So the all-mixed heuristics of the tables above (the same fleet, "
            "trace, loads, telemetry and seeds) are replayed with chunked prefill at vLLM's "
            "budgets (a prefill pays for the decodes beside it, as above) and without it "
            "(`--chunked-prefill off`: a prefill runs alone at its node's full rate and "
            'stalls decode, so it pays no interference); "interference" is the first over '
            "the second, less one. In this node model an H100's 8,192-token chunk takes "
            "455 ms and the decode round beside it 9 ms plus 0.12 ms a sequence (an L4's "
            "2,048 tokens 585 ms, its round 28 ms plus 0.5 ms a sequence), so the cost is a "
            "few percent of a long prompt's prefill."
        ),
        script="""\
mkdir -p docs/results/reports/pd-interference
for setting in vllm off; do
  nice .venv/bin/python -m tools.pd_grid --seeds 0,1,2 --limit 2000 --utilisations 0.7,1.2 \\
    --telemetry-interval 10 --mixed-policies latency-first,weighted-score \\
    --chunked-prefill "$setting" --out "docs/results/reports/pd-interference/$setting.json"
done""",
        render=pd_interference,
    ),
)
