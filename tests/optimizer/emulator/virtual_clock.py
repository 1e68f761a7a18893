"""An asyncio event loop on a virtual clock, for tests of the emulated node model.

The emulator's model time is its loop's clock (`optimizer.emulator.engine`). On the real
clock a test that sleeps to reach a state, then acts, acts whenever the machine lets it: a
busy machine wakes it late, and the model sees the action late (a cancellation 0.4 s into a
0.05 s sleep moved a request's TTFT from 0.075 s to 0.46 s under `nice -n 19` beside a CPU
hog). Here the clock stands still while callbacks run and jumps to the next timer when the
loop would wait for it, so every action lands at the model time the test wrote, however slow
the machine.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable


class _JumpingSelector(selectors.DefaultSelector):
    """Polls; where the loop would block until its next timer, moves the clock there."""

    def __init__(self, jump: Callable[[float], None]) -> None:
        super().__init__()
        self._jump = jump

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            # No timer at all: only I/O or another thread can wake the loop, in real time.
            return super().select(None)
        self._jump(timeout)
        return []


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """`loop.time()` starts at 0 and moves only when every callback due has run and the
    loop would wait for a timer (`asyncio.Runner(loop_factory=VirtualClockLoop)`)."""

    def __init__(self) -> None:
        self._now = 0.0
        super().__init__(_JumpingSelector(self._advance_clock))

    def time(self) -> float:
        return self._now

    def _advance_clock(self, seconds: float) -> None:
        self._now += seconds
