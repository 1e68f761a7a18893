"""One placement decision, in one place: filters, then a scorer, then a picker.

Laid out as the Gateway API Inference Extension's endpoint picker lays out its scheduler
(pkg/epp/scheduling/framework): the interfaces in `framework`, one plugin per file under
`filters/`, `scorers/` and `pickers/`, the sequence once in `pipeline`, every plugin by name in
`registry`; `state/` holds what a decision reads (the fleet as columns, live telemetry, the
prefix index, the estimates, the snapshot) and `request` what it places. Pure: numpy and torch,
never Django, the simulator or training (pyproject.toml's `decide-pure` contract).
docs/architecture.md, "How a decision is made", walks through it.
"""
