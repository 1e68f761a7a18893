"""The top-k picker: the best candidate, then its fallbacks, by descending score.

The GIE EPP's max-score picker (pkg/epp/scheduling/framework/plugins/picker) keeps one; a
Locus decision also answers with ordered fallbacks (docs/contracts.md §4), so it keeps k.
Ties go to the earlier candidate (topology order), as `np.argmax` would.
"""

from __future__ import annotations

import numpy as np


def top_k(scores: np.ndarray, k: int) -> list[int]:
    """The first `k` candidate positions by descending score, ties in candidate order (the
    pick, then the fallbacks): the head of a stable argsort, without sorting every candidate
    of a large fleet."""
    if k == 1:  # the simulator's case: argmax is the first of the highest scores too
        return [int(np.argmax(scores))]
    n = len(scores)
    if n <= 256:  # a stable sort of a few hundred costs less than the partition below
        return np.argsort(-scores, kind="stable")[:k].tolist()
    threshold = np.partition(scores, n - k)[n - k]  # the k-th highest score
    head = np.flatnonzero(scores >= threshold)  # every tie of it included, in order
    return head[np.argsort(-scores[head], kind="stable")[:k]].tolist()


def bottom_k(values: np.ndarray, k: int) -> list[int]:
    """The first `k` positions by ascending value, ties in order, leaving out NaN (a value
    that could not be computed): `top_k(-values, k)` over the others, without negating a
    copy of every value or masking the NaNs first."""
    if k == 1:
        j = int(np.argmin(values))  # the first NaN, when there is one
        if values[j] == values[j]:
            return [j]
        known = np.flatnonzero(values == values)
        return [int(known[np.argmin(values[known])])] if len(known) else []
    n = len(values)
    if n <= 256:  # argsort places NaNs last
        return [j for j in np.argsort(values, kind="stable")[:k].tolist() if values[j] == values[j]]
    threshold = np.partition(values, k - 1)[k - 1]  # the k-th lowest; NaN: fewer are known
    head = np.flatnonzero(values <= threshold if threshold == threshold else values == values)
    return head[np.argsort(values[head], kind="stable")[:k]].tolist()


class TopKPicker:
    """The first `k` candidate positions by descending score (`top_k`)."""

    name = "top-k"
    # The function itself rather than a method calling it: one Python call less on a path
    # whose fastest decisions take about 15 µs.
    pick = staticmethod(top_k)
