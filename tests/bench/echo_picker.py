"""An ext_proc servicer that decides nothing, for `bench_picker.py`: the cost of grpcio's
bidirectional stream alone (the same messages as the picker's request path: the held
headers answered after the body, the body echoed). Benchmarks only.

    .venv/bin/python tests/bench/echo_picker.py PORT
"""

from __future__ import annotations

import asyncio
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


async def main(port: int) -> None:
    server = grpc.aio.server()
    ep_grpc.add_ExternalProcessorServicer_to_server(Echo(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
