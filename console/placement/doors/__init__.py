"""The doors: every way a placement decision is asked, each a thin adapter that translates its
protocol into a `DecisionInput`, calls the one runtime (`engine.runtime.runtime()`) and
translates the `Decision` back. A door never reaches past the runtime into the engine or the
decision package (an import-linter contract in pyproject.toml holds it to that).

- `rest.py`: `POST /api/v1/placements`, `:batch` and `/{id}/outcome` (DRF views).
- `fastpath.py`: the same two decision endpoints answered on the ASGI event loop.
- `extender.py`: the Kubernetes scheduler extender (`/extender/filter`, `/extender/prioritize`).
- `extproc/`: the Envoy ext_proc endpoint picker (`manage.py run_picker`).
- `loopserver.py`: a door server on an asyncio loop of its own thread, and its command's life
  (picker and router); `spawned.py`: the `--processes` copies beside it.

Shared translation: `bodies.py`, `handlers.py` and `answers.py` (the placements body, its
handling and the answer's schema), `openai.py` (an OpenAI request's model, prompt tokens and
prefix blocks), `endpoints.py` (node <-> serving address) and `probe_header.py` (an
exploration probe's note as the `x-locus-probe` header of the doors that answer with a node's
own body). A door that speaks OpenAI to clients and forwards to the node's address (a router)
belongs here beside `extproc/`, its command beside `run_picker` in
`console/placement/management/commands/`.
"""
