"""Every node of a topology as its own OpenAI/vLLM-compatible HTTP endpoint, in one process.

aiohttp serves them: one event loop holds every node's listener (an `AppRunner` and a
`TCPSite` per node), the node model's timer (`EmulatedFleet`) and every open stream, so a
token leaves for its client in the same loop turn the model releases it, with no thread hop;
its server cancels a handler whose client went away (`handler_cancellation`), which is how an
abandoned sequence frees its batch slot and KV at once; it reads bodies with a size limit
(413) and streams with backpressure. It is maintained (aio-libs) and is the client most
OpenAI tooling in Python can also use.

`FleetServer` runs on the caller's loop (`await start()`, `await stop()`); `FleetThread`
runs one on its own loop in a daemon thread, for synchronous callers (tests, the demo).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO, TypeVar

from aiohttp import web

from optimizer.emulator import phases
from optimizer.emulator.endpoint import NodeEndpoint
from optimizer.emulator.engine import EmulatedFleet
from optimizer.emulator.openai import MAX_BODY_BYTES
from optimizer.emulator.sequence import Sequence
from optimizer.observations import observation_line, observation_record
from optimizer.topology import Topology

T = TypeVar("T")
# How long stopping waits for open answers before cutting them.
SHUTDOWN_TIMEOUT_S = 0.5
# Connections a listener queues before accepting them (aiohttp's default is 128): a load
# generator opening a thousand at once must not see its SYNs dropped and retried a second
# later, which would show as a second of TTFT the node never caused.
BACKLOG = 1024


def _layout(t: Topology) -> dict[str, tuple[str, str, int, tuple[str, ...]]]:
    return {n.name: (n.site, n.accelerator, n.gpus, tuple(sorted(n.models))) for n in t.nodes}


class FleetServer:
    """The endpoints of `topology`'s nodes, running on the model of `truth` (default: the
    topology itself), which must describe the same nodes (names, sites, accelerators, GPUs,
    models). A node listens at its `address`, or with `port_base` at `host:port_base + i`
    in file order (`port_base=0`: an ephemeral port each). Requests without an
    `x-locus-source` header come from `source` (default: the first source; with no sources,
    the first site)."""

    def __init__(
        self,
        topology: Topology,
        *,
        truth: Topology | None = None,
        host: str = "127.0.0.1",
        port_base: int | None = None,
        source: str | None = None,
        requests_out: TextIO | None = None,
    ) -> None:
        self.topology = topology
        self.truth = truth or topology
        if _layout(self.truth) != _layout(topology):
            differ = sorted(set(_layout(self.truth).items()) ^ set(_layout(topology).items()))
            names = sorted({name for name, _ in differ})
            raise ValueError(
                "the truth topology does not describe the same nodes (name, site, "
                f"accelerator, GPUs, models); they differ at: {', '.join(names[:10])}"
            )
        # One listener per node of the model, in the truth's order (the model's node index);
        # the two files may list their nodes in different orders (the console's inventory
        # lists them by name).
        position = {n.name: i for i, n in enumerate(topology.nodes)}
        self.names = [n.name for n in self.truth.nodes]
        self.binds: list[tuple[str, int]] = []
        if port_base is None:
            missing = [n.name for n in topology.nodes if n.address is None]
            if missing:
                raise ValueError(
                    "nodes without an address (give them one, or use --port-base): "
                    + ", ".join(missing[:10])
                )
            for name in self.names:
                address = topology.nodes[position[name]].address
                assert address is not None
                ip, _, port = address.rpartition(":")
                self.binds.append((ip.strip("[]"), int(port)))
        else:
            if port_base and port_base + len(topology.nodes) - 1 > 65535:
                raise ValueError(f"--port-base {port_base}: not enough ports for every node")
            self.binds = [
                (host, port_base + position[name] if port_base else 0) for name in self.names
            ]
        world = self.truth
        if source is not None and source not in world.source_by_name:
            known = ", ".join(s.name for s in world.sources) or "none"
            raise ValueError(f"--source {source!r} is not a source of the topology ({known})")
        if source is None and world.sources:
            source = world.sources[0].name
        site = world.source_by_name[source].site if source else world.sites[0].name
        self.default: tuple[str | None, str] = (source, site)
        self.requests_out = requests_out
        self.urls: dict[str, str] = {}
        self.fleet: EmulatedFleet | None = None
        self._runners: list[web.AppRunner] = []

    async def start(self) -> None:
        """Build the node model on the running loop and open every listener (OSError if one
        cannot be opened: nothing stays open then)."""
        self.fleet = EmulatedFleet(self.truth)
        if self.requests_out is not None:
            self.fleet.on_end = self._observe
        started = int(time.time())
        handoffs = phases.Handoffs()
        try:
            for i, (host, port) in enumerate(self.binds):
                endpoint = NodeEndpoint(self.fleet, i, self.default, started, handoffs)
                app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[endpoint.errors])
                endpoint.route(app)
                runner = web.AppRunner(
                    app,
                    handler_cancellation=True,
                    shutdown_timeout=SHUTDOWN_TIMEOUT_S,
                    access_log=None,
                )
                await runner.setup()
                self._runners.append(runner)
                site = web.TCPSite(runner, host, port, backlog=BACKLOG)
                await site.start()
                bound = runner.addresses[0]
                shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
                name = self.names[i]
                self.urls[name] = f"http://{shown}:{bound[1]}"
                # Which node a prefiller's host:port names (x-prefiller-host-port): the
                # listener's bound address and, when the topology gives one, its address.
                self.fleet.endpoints[f"{shown}:{bound[1]}"] = i
                address = self.topology.node_by_name[name].address
                if address is not None:
                    self.fleet.endpoints[address] = i
        except BaseException:
            await self.stop()
            raise

    def _observe(self, seq: Sequence, ok: bool) -> None:
        """One line per request (docs/twin.md), as `simulate --requests-out` writes it. A
        split request's (issue #30) is written when its decode phase ends: `node` decoded it,
        `prefill_node` prefilled it, and its times run from its arrival at the prefill node
        to the client's tokens. Its prefill phase writes nothing unless the request ended
        there (the client went away): then a line with no latencies, naming the decode node
        when it is known (llm-d's sidecar), else as a request of the prefill node alone."""
        assert self.requests_out is not None
        world = self.truth
        node, prefill, arrival = seq.node, seq.prefilled_on, seq.arrival
        measured = ok
        if seq.prefill_phase:
            if ok:
                return
            if seq.decode_node >= 0:
                node, prefill = seq.decode_node, seq.node
        elif prefill >= 0:
            # The router's second call whose first this server did not hand off: its arrival
            # is unknown, so are its latencies.
            measured = ok and seq.origin is not None
            arrival = seq.origin if seq.origin is not None else seq.arrival
        source = world.source_by_name.get(seq.source) if seq.source else None
        record = observation_record(
            timestamp_ms=arrival * 1000.0,
            input_length=seq.prompt_tokens,
            output_length=seq.output,
            hash_ids=seq.hashes,
            source=seq.source,
            model=world.models[seq.model].name,
            slo=source.slo if source else None,
            node=world.nodes[node].name,
            ttft_ms=(seq.arrival + seq.ttft_s - arrival) * 1000.0 if measured else None,
            e2e_ms=(seq.arrival + seq.e2e_s - arrival) * 1000.0 if measured else None,
            ok=measured,
            site=seq.site,
            prefill_node=world.nodes[prefill].name if prefill >= 0 else None,
        )
        self.requests_out.write(observation_line(record))

    async def stop(self) -> None:
        """Close every listener; answers still open are cut after `SHUTDOWN_TIMEOUT_S`."""
        runners, self._runners = self._runners, []
        await asyncio.gather(*(runner.cleanup() for runner in runners))

    async def stop_node(self, name: str) -> None:
        """Take one node off the network, as a dead server: its listener closes, new
        connections are refused, and its open answers are cut within `SHUTDOWN_TIMEOUT_S`
        (their sequences freed). The other nodes serve on."""
        index = self.names.index(name)
        await self._runners[index].cleanup()


class FleetThread:
    """A `FleetServer` on its own event loop in a daemon thread (same arguments)."""

    def __init__(self, topology: Topology, **options: Any) -> None:
        self.server = FleetServer(topology, **options)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="serve-fleet", daemon=True
        )

    @property
    def urls(self) -> dict[str, str]:
        return self.server.urls

    def start(self) -> FleetThread:
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result()
        except BaseException:
            self.stop()
            raise
        return self

    def call(self, fn: Callable[[EmulatedFleet], T]) -> T:
        """`fn(fleet)` run on the server's loop (the model's state read between events)."""

        async def run() -> T:
            assert self.server.fleet is not None
            return fn(self.server.fleet)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    def stop_node(self, name: str) -> None:
        """`FleetServer.stop_node`, from another thread."""
        asyncio.run_coroutine_threadsafe(self.server.stop_node(name), self._loop).result()

    def stop(self) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result()
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        self._loop.close()

    def __enter__(self) -> FleetThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
