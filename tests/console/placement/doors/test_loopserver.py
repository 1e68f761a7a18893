"""`LoopServer`: a door's server on a loop of its own thread, started, waited on and stopped
from the caller's thread (the picker's and the router's servers stand on it)."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass

import pytest

from console.placement.doors.loopserver import LoopServer


@dataclass
class EchoServer(LoopServer):
    """A TCP echo server on the loop, as small as a door's server can be."""

    port: int = 0
    bound_port: int = 0

    def start(self) -> EchoServer:
        self._launch("test-echo")
        return self

    async def _serve(self) -> None:
        self._stop = asyncio.Event()

        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(await reader.readline())
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", self.port)
        self.bound_port = server.sockets[0].getsockname()[1]
        self._started.set()
        try:
            await self._stop.wait()
        finally:
            server.close()
            await server.wait_closed()


def test_start_returns_listening_and_stop_ends_the_thread() -> None:
    server = EchoServer().start()
    with socket.create_connection(("127.0.0.1", server.bound_port), timeout=5) as conn:
        conn.sendall(b"hello\n")
        assert conn.recv(64) == b"hello\n"
    server.stop()
    assert server._thread is not None and not server._thread.is_alive()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.bound_port), timeout=1)


def test_a_server_that_cannot_listen_raises_on_the_callers_thread() -> None:
    taken = EchoServer().start()
    try:
        blocker = socket.socket()
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        with pytest.raises(OSError):
            EchoServer(port=blocker.getsockname()[1]).start()
        blocker.close()
    finally:
        taken.stop()


def test_wait_runs_its_chore_until_the_server_stops() -> None:
    server = EchoServer().start()
    calls: list[int] = []

    def chore() -> None:
        calls.append(1)
        if len(calls) == 2:
            server.stop()

    server.wait(every=chore)
    assert len(calls) == 2
    # Stopping twice, or a stopped server, is harmless (a SIGTERM after Ctrl-C).
    server.stop()
