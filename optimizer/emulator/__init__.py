"""Emulated inference nodes: every node of a topology served over the real protocols.

`python -m optimizer serve-fleet` (docs/emulator.md) runs each node as an OpenAI/vLLM-compatible
HTTP endpoint whose timing is the simulator's node model in real time: continuous batching,
KV admission, the prefix cache and the profile's speeds (`optimizer.sim`), plus the network
distance from the request's source. It is to Locus what llm-d's inference simulator is to
llm-d: something real routers, load generators and the console's scraper can be pointed at.

- `engine`: the node model against the wall clock (`EmulatedFleet`);
- `sequence`: one request, and its tokens handed on when the client would see them;
- `node`: the simulator's node and request table, opened to live requests (`cancel`);
- `endpoint`, `server`: the HTTP endpoints (`FleetServer`, `FleetThread`);
- `openai`: request parsing and answer shapes; `metrics`: vLLM's `/metrics`;
- `text`: deterministic filler, including prompts that carry a trace's prefix sharing.
"""

from optimizer.emulator.engine import EmulatedFleet
from optimizer.emulator.server import FleetServer, FleetThread
from optimizer.emulator.text import output_text, trace_prompt

__all__ = ["EmulatedFleet", "FleetServer", "FleetThread", "output_text", "trace_prompt"]
