"""The placement read API's shapes, one module per endpoint family: `decisions` (GET
/api/v1/decisions: the search query and the recorded decision) with the decision's `receipts`,
`overview` (GET /api/v1/overview), `series` (GET /api/v1/series/fleet) and `nodes` (GET
/api/v1/nodes/{name}/why). The decision doors' answers are `console/placement/doors/answers.py`."""
