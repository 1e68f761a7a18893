"""`serve-fleet`: every node of a topology as an emulated inference endpoint (docs/emulator.md)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from optimizer import argtypes
from optimizer.errors import InputFileError
from optimizer.topology_files import load_topology


def _port_base(text: str) -> int:
    """A first port (0: an ephemeral port for each node)."""
    return 0 if text.strip() == "0" else argtypes.port(text)


def add_parser(commands: Any) -> None:
    """Add `serve-fleet` to `python -m optimizer`'s subcommands."""
    serve = commands.add_parser(
        "serve-fleet",
        help="serve every node of a topology as an emulated OpenAI/vLLM endpoint",
    )
    serve.add_argument("--topology", required=True, help="topology YAML (docs/contracts.md §1)")
    serve.add_argument(
        "--truth",
        default=None,
        help="topology the nodes really run at (same nodes; its profiles and links are used)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on with --port-base")
    serve.add_argument(
        "--port-base",
        type=_port_base,
        default=None,
        metavar="P",
        help="node i (file order) listens on host:P+i instead of its address (0: ephemeral)",
    )
    serve.add_argument(
        "--source",
        type=argtypes.name,
        default=None,
        help="source of requests without an x-locus-source header (default: the first)",
    )
    serve.add_argument(
        "--requests-out",
        default=None,
        help="append one observation per finished request here (JSONL, docs/twin.md)",
    )
    serve.add_argument("--seed", type=argtypes.natural, default=0, help="accepted for uniformity")
    serve.set_defaults(func=cmd_serve_fleet)


def cmd_serve_fleet(args: argparse.Namespace) -> int:
    from optimizer.emulator import FleetServer

    topology = load_topology(args.topology)
    truth = load_topology(args.truth) if args.truth else None
    out = None
    if args.requests_out:
        try:
            # Line-buffered: each observation is in the file once its request is over.
            out = open(args.requests_out, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        except OSError as exc:
            raise InputFileError(args.requests_out, [f"cannot write: {exc.strerror}"]) from exc
    try:
        try:
            server = FleetServer(
                topology,
                truth=truth,
                host=args.host,
                port_base=args.port_base,
                source=args.source,
                requests_out=out,
            )
        except ValueError as exc:
            raise InputFileError(args.truth or args.topology, [str(exc)]) from exc
        return asyncio.run(_serve(server))
    finally:
        if out is not None:
            out.close()


async def _serve(server: Any) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await server.start()
    except OSError as exc:
        print(f"error: cannot listen: {exc}", file=sys.stderr)
        return 2
    for name, url in server.urls.items():
        print(f"{name} {url}")
    print(f"serve-fleet: {len(server.urls)} nodes ready", flush=True)
    await stop.wait()
    await server.stop()
    print("serve-fleet: stopped", flush=True)
    return 0
