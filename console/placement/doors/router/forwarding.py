"""The nodes as the router reaches them: one pooled client session, and the walk down a
decision's pick and fallbacks until a node answers.

A node is skipped for the next one when it cannot be reached (refused, reset, the connect
timeout) or answers 5xx before any byte of its answer was relayed; each skipped node counts as
a failure on its breaker. Past the first relayed byte there is no going back: the client has
part of one node's answer. A 4xx is the node's answer to this request (a context longer than
its KV room, say) and is relayed as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import aiohttp
from django.conf import settings
from multidict import CIMultiDict

from console.placement.doors.router.calls import SOURCE_HEADER

# Headers of a connection, not of a message (RFC 9110 §7.6.1), and those the router sets.
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "host",
        "authorization",
        "content-encoding",
    }
)
# Request headers passed on to the node (the rest are the client's business with Locus).
_PASSED = ("accept", "content-type", "user-agent", "x-request-id", "traceparent", "tracestate")


def response_headers(upstream: Mapping[str, str]) -> CIMultiDict[str]:
    """The node's answer headers a client may see (what makes sense past a proxy)."""
    return CIMultiDict((k, v) for k, v in upstream.items() if k.lower() not in _HOP)


def node_headers(client_headers: Mapping[str, str], source: str) -> dict[str, str]:
    """The headers of a request to a node: the client's that make sense there, the source
    and the nodes' API key."""
    headers = {k: v for k in _PASSED if (v := client_headers.get(k)) is not None}
    # The emulated nodes add the network distance from this source (docs/emulator.md).
    headers[SOURCE_HEADER] = source
    if settings.LOCUS_ROUTER_UPSTREAM_API_KEY:
        headers["Authorization"] = f"Bearer {settings.LOCUS_ROUTER_UPSTREAM_API_KEY}"
    return headers


@dataclass
class Attempt:
    """One node tried: its name, and what went wrong (empty when it answered)."""

    node: str
    error: str = ""
    status: int = 0


@dataclass
class Forwarded:
    """The answer being relayed: the node that gave it, and those skipped before it."""

    node: str
    response: aiohttp.ClientResponse
    attempts: list[Attempt] = field(default_factory=list)


class Upstream:
    """One client session for every node: keep-alive connections pooled per node, no cap on
    their number (a cap would queue calls in the router, out of the engine's sight)."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, limit_per_host=0, ttl_dns_cache=300),
                # No total timeout: an answer may stream for minutes. The connect timeout
                # sends a dead node's calls to the next fallback.
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=settings.LOCUS_ROUTER_CONNECT_TIMEOUT_SECONDS
                ),
                auto_decompress=False,  # relayed as the node sent them
                # Plain answers: the relay reads their events and usage, and passes them on as is.
                skip_auto_headers=("User-Agent", "Accept-Encoding"),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def forward(
        self,
        path: str,
        body: bytes,
        nodes: list[tuple[str, str]],
        client_headers: Mapping[str, str],
        source: str,
    ) -> tuple[Forwarded | None, list[Attempt]]:
        """POST `body` to each `(node, address)` in turn until one answers below 500 (or the
        last one answers at all); None and the attempts when none could be reached."""
        headers = node_headers(client_headers, source)
        attempts: list[Attempt] = []
        for index, (node, address) in enumerate(nodes):
            last = index == len(nodes) - 1
            try:
                response = await self.session().post(
                    f"http://{address}{path}", data=body, headers=headers
                )
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                attempts.append(Attempt(node, error=f"{type(exc).__name__}: {exc}"[:300]))
                continue
            if response.status >= 500 and not last:
                attempts.append(
                    Attempt(node, error=f"HTTP {response.status}", status=response.status)
                )
                response.close()  # never reused: its answer is not read
                continue
            return Forwarded(node, response, attempts), attempts
        return None, attempts
