"""The unknowns' layout and the normal equations one calibration step accumulates
(`design.accumulate`) and solves (`fit.solve`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Layout:
    """Where each parameter sits in θ: x, s, c per profile (topology order), then the RTT of
    each fitted link, then the seconds per byte (1 / bandwidth) of each link whose transfers
    are fitted (split requests' KV, issue #30)."""

    profiles: int
    links: tuple[int, ...]  # topology link indices whose RTT is fitted, in θ order after 3P
    transfers: tuple[int, ...] = ()  # topology link indices whose bandwidth is fitted, after

    @property
    def size(self) -> int:
        return 3 * self.profiles + len(self.links) + len(self.transfers)


@dataclass
class NormalEquations:
    """AᵀA, Aᵀb and bᵀb of the weighted rows (each row divided by its observed latency, so
    the fit minimises squared relative errors), and the row count. Per profile, the
    sequence-rounds and rounds its requests decoded in (their ratio is the mean batch size
    the decode terms were measured at)."""

    ata: np.ndarray
    atb: np.ndarray
    btb: float
    rows: int
    sequence_rounds: np.ndarray
    rounds: np.ndarray
    # Per parameter, the rows that inform it (a non-zero coefficient): how much data there
    # is to pin it down (fit.solve holds a parameter with fewer than `min_rows`).
    support: np.ndarray
    # Per profile, the TTFT rows left out because the replay put the request in a queue
    # (QUEUE_SHARE), and those kept.
    queued: np.ndarray
    queue_free: np.ndarray
    # Per profile, over its fitted requests, [count, sum, sum of squares] of the uncached
    # prompt tokens per GPU and of the mean decode batch each request saw: the spread that
    # separates a prefill rate from the rest, and a per-sequence step from the fixed step.
    prompt_moments: np.ndarray
    batch_moments: np.ndarray
    # Per profile, the decode rows left out because prefills whose rate is held (fit.py,
    # MIN_QUEUE_FREE_ROWS) filled more than QUEUE_SHARE of their decode (design.accumulate).
    decode_left_out: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def add(self, a: np.ndarray, b: np.ndarray) -> None:
        """Accumulate the weighted rows `a` (one a row) and their right-hand sides `b`."""
        self.ata += a.T @ a
        self.atb += a.T @ b
        self.btb += float(b @ b)
        self.rows += len(b)
        self.support += (a > 0).sum(axis=0)

    def mean_batch(self) -> np.ndarray:
        """Per profile the mean decode batch its requests saw (0: none decoded)."""
        return np.divide(
            self.sequence_rounds,
            self.rounds,
            out=np.zeros_like(self.rounds),
            where=self.rounds > 0,
        )

    def spread(self) -> tuple[np.ndarray, np.ndarray]:
        """Per profile the coefficient of variation of the uncached prompt tokens and of the
        decode batch over its fitted requests (0 without data)."""
        return _cv(self.prompt_moments), _cv(self.batch_moments)


def _cv(moments: np.ndarray) -> np.ndarray:
    n, total, squares = moments.T
    mean = np.divide(total, n, out=np.zeros_like(total), where=n > 0)
    var = np.divide(squares, n, out=np.zeros_like(total), where=n > 0) - mean**2
    return np.divide(
        np.sqrt(np.clip(var, 0.0, None)), mean, out=np.zeros_like(total), where=mean > 0
    )
