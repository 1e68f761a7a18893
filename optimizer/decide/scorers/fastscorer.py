"""The exported scorer evaluated with numpy: the decision hot path's learned scorer.

`scorer.pt` stays the artifact (its SHA-256 is what a registered version records, and
TorchScript is what `train` writes), but calling a TorchScript module costs ~100 µs of
dispatch per call at 64 rows where the arithmetic takes a few (docs/architecture.md measured
frozen TorchScript ~80 µs, numpy ~55 µs). So at load the frozen graph's constants are read
back (`ScriptModule.code_with_constants`), the per-feature normalisation is folded into the
first layer (x - shift) / scale . W1 = x . (W1 / scale) - (W1 / scale) . shift, and the
Deep Sets forward (`optimizer.rl.network.CandidateScorer`) runs as five float32 matrix
products. The graph must be the one `export_scorer` writes (checked by constant shapes), and
the numpy scores must match the module's on random rows before they replace it
(`from_module` returns None otherwise and the caller keeps TorchScript).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported where a module is read (see learned.py's loader)
    import torch

# Tolerance of the load-time check: float32 with the normalisation folded differs from the
# module by rounding only (~1e-6 relative); anything larger means a different graph.
_CHECK_ATOL = 1e-3
_CHECK_ROWS = 64


class NumpyScorer:
    """rows (n, F) float32, all valid -> one float64 score per row."""

    def __init__(self, weights: list[np.ndarray]) -> None:
        shift, scale, w1, b1, w2, b2, w3, b3, w4, b4 = weights
        hidden = w2.shape[0]
        folded = w1 / scale[None, :]
        self._w1t = np.ascontiguousarray(folded.T, dtype=np.float32)
        self._b1 = (b1 - folded @ shift).astype(np.float32)
        self._w2t = np.ascontiguousarray(w2.T, dtype=np.float32)
        self._b2 = b2.astype(np.float32)
        self._w3h = np.ascontiguousarray(w3[:, :hidden].T, dtype=np.float32)
        self._w3c = w3[:, hidden:].astype(np.float32)
        self._b3 = b3.astype(np.float32)
        self._w4 = np.ascontiguousarray(w4[0], dtype=np.float32)
        self._b4 = float(b4[0])

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        h = np.tanh(np.tanh(rows @ self._w1t + self._b1) @ self._w2t + self._b2)
        # CandidateScorer: masked mean and max over the rows (all valid here), appended to
        # every row; the head's first layer splits into a per-row and a shared part.
        context = np.concatenate((h.mean(axis=0), h.max(axis=0)))
        shared = self._w3c @ context + self._b3
        z = np.tanh(h @ self._w3h + shared)
        return (z @ self._w4 + self._b4).astype(np.float64)

    # -- for explanations (optimizer.decide.explain_learned), never on the hot path ---------
    def shared_term(self, rows: np.ndarray) -> np.ndarray:
        """The head's shared input for this candidate set (its pooled context), float64."""
        x = rows.astype(np.float64)
        h = np.tanh(np.tanh(x @ self._w1t + self._b1) @ self._w2t + self._b2)
        context = np.concatenate((h.mean(axis=0), h.max(axis=0)))
        return np.asarray(self._w3c @ context + self._b3, dtype=np.float64)

    def row_scores_and_gradients(
        self, rows: np.ndarray, shared: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each row's score with the pooled context held at `shared`, and its gradient with
        respect to the row's features (backpropagated through the three tanh layers), float64."""
        x = rows.astype(np.float64)
        a1 = np.tanh(x @ self._w1t + self._b1)
        h = np.tanh(a1 @ self._w2t + self._b2)
        z = np.tanh(h @ self._w3h + shared)
        scores = z @ self._w4 + self._b4
        dz = (1.0 - z * z) * self._w4
        dh = (dz @ self._w3h.T) * (1.0 - h * h)
        da1 = (dh @ self._w2t.T) * (1.0 - a1 * a1)
        return scores, da1 @ self._w1t.T

    @classmethod
    def from_module(cls, module: torch.jit.ScriptModule, n_features: int) -> NumpyScorer | None:
        """The numpy twin of a scorer written by `export_scorer`, or None when the module is
        not of that shape or its twin does not give its scores."""
        try:
            constants = module.code_with_constants[1].const_mapping
            weights = [constants[f"c{i}"].detach().numpy() for i in range(10)]
        except (AttributeError, KeyError, RuntimeError, IndexError):
            return None
        shapes = [w.shape for w in weights]
        hidden = shapes[4][0] if len(shapes[4]) == 2 else -1
        expected = [
            (n_features,),
            (n_features,),
            (hidden, n_features),
            (hidden,),
            (hidden, hidden),
            (hidden,),
            (hidden, 3 * hidden),
            (hidden,),
            (1, hidden),
            (1,),
        ]
        if shapes != expected:
            return None
        import torch

        twin = cls(weights)
        rng = np.random.default_rng(0)
        rows = rng.uniform(-1.0, 5.0, size=(_CHECK_ROWS, n_features)).astype(np.float32)
        with torch.no_grad():
            reference = module(torch.from_numpy(rows), torch.ones(_CHECK_ROWS, dtype=torch.bool))
        if not np.allclose(twin(rows), reference.numpy(), rtol=1e-4, atol=_CHECK_ATOL):
            return None
        return twin
