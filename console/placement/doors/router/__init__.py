"""Locus as an OpenAI-compatible router (docs/router.md): clients send OpenAI requests here,
the engine picks a node, the request goes there and the answer streams back unchanged.

The decision is the REST API's and the ext_proc picker's (`runtime().decide`: same engine,
policy, rollout arms, breakers, records and live stream), and the outcome goes through
`runtime().record_outcome` with no client help, as the picker's response path does.

Modules, one seam each: `app` (the aiohttp server, `/v1/models`, `/health`), `handler` (one
completion call, start to end), `calls` (an OpenAI body read into a decision input and the body
to forward), `auth` (service keys), `limits` (body size, shedding), `forwarding` (the pooled
upstream connections and the retry down the fallbacks), `streaming` (the answer relayed byte
for byte, its first token and `usage` spotted on the way), `outcome` (what is recorded),
`errors` (OpenAI's error shape), `processes` (`--processes N` on one port).

Why aiohttp, not httpx: one library serves and forwards. The router needs an HTTP server
as well as a client, and aiohttp is both: its server cancels a handler whose client went away
(`handler_cancellation`), which is how a disconnect reaches the upstream request; its client
pools keep-alive connections per node (`TCPConnector`) and streams the answer as it arrives.
httpx is a client only (the server would be a second stack: uvicorn plus an ASGI app), and
its AsyncClient is reported much slower than aiohttp's session with many concurrent requests
(encode/httpx issue #3215, open).
aiohttp is maintained by aio-libs, and is already a dependency: the emulated nodes
(optimizer/emulator) are served with it.
"""
