"""What the NUL and nesting checks of console/api/jsonbody.py cost over a bare json.loads.

    .venv/bin/python tests/bench/bench_jsonbody.py [--rounds 3000]

Parses a typical placements body and a 100-request batch, alternating json.loads (the
baseline) and jsonbody.loads round by round so both see the same machine load, and prints
the median time of each and their ratio. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.api import jsonbody  # noqa: E402

REQUEST = {
    "model": "llama-3.1-8b",
    "source": "munich-app",
    "prompt_tokens": 1800,
    "max_output_tokens": 256,
    "prefix_hashes": list(range(11, 40)),
    "session_id": "user-42",
}


def _median_us(samples: list[float]) -> float:
    return sorted(samples)[len(samples) // 2] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3000)
    rounds = parser.parse_args().rounds
    bodies = {
        "single request": json.dumps(REQUEST).encode(),
        "batch of 100": json.dumps({"requests": [REQUEST] * 100}).encode(),
    }
    for name, body in bodies.items():
        times: dict[str, list[float]] = {"json.loads": [], "jsonbody.loads": []}
        parsers: dict[str, Callable[[bytes], object]] = {
            "json.loads": json.loads,
            "jsonbody.loads": jsonbody.loads,
        }
        for _ in range(rounds):
            for label, parse in parsers.items():
                started = time.perf_counter()
                parse(body)
                times[label].append(time.perf_counter() - started)
        base, checked = (_median_us(times[label]) for label in parsers)
        print(
            f"{name} ({len(body)} bytes): json.loads {base:.1f} µs, "
            f"jsonbody.loads {checked:.1f} µs, ratio {checked / base:.3f}"
        )


if __name__ == "__main__":
    main()
