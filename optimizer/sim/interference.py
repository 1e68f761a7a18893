"""Prefill-decode interference on mixed nodes: chunked prefill (`--chunked-prefill`).

Without it (the default) a node is vLLM without chunked prefill: a prefill runs alone, in one
step, and stalls every decoding sequence until it ends (`optimizer.sim.node`). With it, a node
schedules as vLLM's chunked-prefill scheduler and Sarathi-Serve do: every step carries one
token of each decoding sequence first, and fills the rest of a token budget
(`max_num_batched_tokens`) with a chunk of the prefill at the head of the node's work; a
prompt longer than the budget takes several steps. The cost is mechanistic, not a factor:

    step = chunk / prefill rate + decode round (decode_step_ms + decode_step_ms_per_seq * batch)

so a prefill that shares its node with b decoding sequences takes ceil(uncached / (budget - b))
steps, each also paying the round, and those sequences get one token a step instead of none
until the prefill ends. This is the interference the literature measures:
- DistServe (Zhong et al., OSDI'24, §2.2, Fig. 2): adding one prefill to a batch of decodes
  slows the step sharply, the more the longer the prefill (the step carries its compute), so
  decodes slow while prefills run, and a prefill batched with decodes is slowed by them;
- Sarathi-Serve (Agrawal et al., OSDI'24, §4): chunked prefill bounds the decode stall to one
  chunk's compute, and decodes share each step's token budget with the prefill chunk;
- vLLM's scheduler (vllm/v1/core/sched/scheduler.py): running requests (decodes) are
  scheduled first, each taking one token of `max_num_batched_tokens`, and waiting prefills
  get what is left, a long prompt chunked across steps.
No coefficient is fitted: the chunk's time is the profile's prefill rate, the round's the
profile's decode step. Two simplifications, both in the prefill's favour: the decode round is
added whole, as if the step's weights were read twice (a hybrid step reads them once, so the
round's fixed part is shared; Sarathi-Serve's "piggybacking"), which is the pessimistic side,
and a chunk's attention over the prompt's earlier chunks (Sarathi-Serve's chunking overhead)
is not charged, which is the optimistic side. The last chunk's leftover budget is not given
to the next prefill (one prefill at a time, as the node has always run them).

Nodes with role `prefill` never hold a decoding sequence (split requests leave prefilled) and
nodes with role `decode` never prefill (split requests arrive prefilled), so only nodes that
run both phases pay. A node with no sequence decoding prefills as before, tokens / rate.

The budget is vLLM's default unless given: `EngineArgs.get_batch_defaults`
(vllm/engine/arg_utils.py) gives the OpenAI server 8192 tokens on GPUs with at least 70 GiB
that are not A100s (H100, H200, MI300X) and 2048 on the rest. A node's budget is that times
its GPUs, as its batch is `max_batch * gpus` (each GPU an engine of its own), so a chunk's
step takes the same time on a node of one GPU or several.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.topology import Topology

# vLLM's defaults for its OpenAI server (EngineArgs.get_batch_defaults, above).
VLLM_LARGE_GPU_GIB = 70
VLLM_LARGE_GPU_BUDGET = 8192
VLLM_BUDGET = 2048


def vllm_budget(accelerator: str, memory_gib: float) -> int:
    """vLLM's default `max_num_batched_tokens` for its OpenAI server on one such GPU."""
    large = memory_gib >= VLLM_LARGE_GPU_GIB and "a100" not in accelerator.lower()
    return VLLM_LARGE_GPU_BUDGET if large else VLLM_BUDGET


@dataclass(frozen=True, slots=True)
class ChunkedPrefill:
    """Chunked prefill on every node: a token budget per GPU (None: vLLM's default for the
    node's accelerator, `vllm_budget`)."""

    budget: int | None = None

    def describe(self) -> str | int:
        """For reports: the budget, or "vllm" for vLLM's defaults."""
        return "vllm" if self.budget is None else self.budget

    def node_budgets(self, topology: Topology) -> list[int]:
        """Per node (topology order) its step's token budget. ValueError when a node's full
        batch would leave no room for a prefill chunk (vLLM would then never prefill)."""
        memory = {a.name: a.memory_gib for a in topology.accelerators}
        out = []
        for node in topology.nodes:
            per_gpu = self.budget or vllm_budget(node.accelerator, memory[node.accelerator])
            budget = per_gpu * node.gpus
            batch = sum(
                topology.profile_by_key[(m, node.accelerator)].max_batch * node.gpus
                for m in node.models
            )
            if budget <= batch:
                raise ValueError(
                    f"node {node.name}: a chunked-prefill budget of {budget} tokens leaves no "
                    f"room for a prefill beside a full batch of {batch} sequences"
                )
            out.append(budget)
        return out


def chunk_run(left: float, fill: float, size: int, due: int) -> tuple[int, float, float]:
    """A prefill run beside decoding sequences: `left` prompt tokens still to compute, `fill`
    tokens already in the open step, `size` prefill tokens a step holds (budget - batch), and
    the run ending at the latest when `due` >= 1 steps have closed (a sequence finishes
    there). Returns (steps closed, each with a decode round; prefill tokens computed; tokens
    in the step left open). A batch grown since the step opened closes it at once when
    it already holds `size` tokens or more."""
    fill = min(fill, size)
    first = size - fill  # tokens to the first step's close
    ends = 0 if left < first else 1 + int((left - first) // size)
    if ends >= due:
        return due, first + (due - 1) * size, 0.0
    return ends, left, fill + left - ends * size


def parse_chunked_prefill(text: str) -> ChunkedPrefill:
    """`--chunked-prefill` as given: "vllm" (vLLM's defaults) or a budget in tokens per GPU."""
    if text == "vllm":
        return ChunkedPrefill()
    try:
        budget = int(text)
    except ValueError:
        budget = 0
    if budget < 1:
        raise ValueError(f"expected 'vllm' or a token budget >= 1, got {text!r}")
    return ChunkedPrefill(budget)
