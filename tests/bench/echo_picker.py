"""An ext_proc servicer that decides nothing, for `bench_picker.py`: the cost of grpcio's
bidirectional stream alone (the same messages as the picker's request path: the held
headers answered after the body, the body echoed). Benchmarks only.

    .venv/bin/python tests/bench/echo_picker.py PORT [PROCESSES]

With PROCESSES > 1, that many echoes listen on PORT (grpcio's SO_REUSEPORT), as
`run_picker --processes` does.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import grpc
from envoy.service.ext_proc.v3 import external_processor_pb2 as ep
from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ep_grpc


class Echo(ep_grpc.ExternalProcessorServicer):
    async def Process(  # noqa: N802 (the gRPC method's name)
        self, request_iterator: AsyncIterator[ep.ProcessingRequest], context: Any
    ) -> AsyncIterator[ep.ProcessingResponse]:
        async for message in request_iterator:
            if message.HasField("request_body"):
                yield ep.ProcessingResponse(request_headers=ep.HeadersResponse())
                yield ep.ProcessingResponse(
                    request_body=ep.BodyResponse(
                        response=ep.CommonResponse(
                            body_mutation=ep.BodyMutation(
                                streamed_response=ep.StreamedBodyResponse(
                                    body=message.request_body.body, end_of_stream=True
                                )
                            )
                        )
                    )
                )


async def main(port: int, others: list[subprocess.Popen[bytes]]) -> None:
    server = grpc.aio.server(options=[("grpc.so_reuseport", 1)])
    ep_grpc.add_ExternalProcessorServicer_to_server(Echo(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    # SIGTERM stops the server on its own loop: a SystemExit raised from a plain signal
    # handler closed the loop under a live server, whose __del__ then failed ("Event loop is
    # closed").
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    await stopping.wait()
    await server.stop(None)
    for child in others:
        child.terminate()
    for child in others:
        child.wait(10)


if __name__ == "__main__":
    processes = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    others = [
        subprocess.Popen([sys.executable, __file__, sys.argv[1]]) for _ in range(processes - 1)
    ]
    asyncio.run(main(int(sys.argv[1]), others))
