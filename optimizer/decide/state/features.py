"""The feature contract of learned scorers: the names, order and version of a candidate's row.

`Candidates.rows` computes the rows on columns, `optimizer.features.candidate_rows` per node
(the parity tests' oracle); a trained scorer records `FEATURE_VERSION` and the loader
(`optimizer.decide.scorers.learned`) refuses another. Bump it on any change to names, order or
scales, in both.
"""

from __future__ import annotations

from optimizer.topology import TIERS

FEATURE_VERSION = 1

# A ratio of estimate over target beyond this says "hopeless"; clipping keeps outliers from
# dominating a scorer's inputs.
MAX_RATIO = 10.0

FEATURE_NAMES: tuple[str, ...] = (
    # request (the same in every row)
    "req_prompt_ktokens",  # prompt tokens / 1000
    "req_output_ktokens",  # max output tokens / 1000
    "req_slo_ttft_s",  # TTFT target, seconds
    "req_slo_e2e_min",  # E2E target, minutes
    "req_residency_bound",  # 1 if the request must stay in a jurisdiction
    # candidate estimates
    "est_ttft_s",
    "est_e2e_min",
    "est_wait_s",
    "est_prefill_s",
    "ttft_over_target",  # est TTFT / TTFT target, clipped to 10
    "e2e_over_target",  # est E2E / E2E target, clipped to 10
    "est_cost_usd_per_1k",  # this request's estimated cost x 1000
    "rtt_100ms",  # RTT / 100 ms
    "transfer_s",
    "prefix_match_fraction",  # prompt share served from this node's cache
    "same_site",
    # candidate load
    "queue_per_slot",  # waiting requests / batch limit
    "batch_fraction",  # decoding sequences / batch limit
    "kv_used_fraction",
    # candidate static
    "usd_per_hour_10",  # price / 10 USD
    "prefill_ktokens_per_s_10",  # prefill rate / 10k tokens/s
    "decode_step_100ms",  # base decode step / 100 ms
    *(f"tier_{tier}" for tier in TIERS),
)
N_FEATURES = len(FEATURE_NAMES)
