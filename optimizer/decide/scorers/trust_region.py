"""The trust region: a learned scorer that cannot stray far from a strong heuristic.

Issue #26, item 2, "do no harm, by construction". A learned scorer is served around its
anchor, a built-in heuristic (policy.json's `trust_region.anchor`; weighted-score by default,
`optimizer.decide.registry.DEFAULT_ANCHOR` says why not the warm-start teacher). For each
decision:

1. **Out of distribution, the anchor decides.** If any candidate's feature row lies more than
   `z_max` standard deviations from the training mean on any feature (policy.json's
   `normalisation`: `shift` is the mean and `scale` the deviation of the training rows, the
   only statistics an artifact records), the scorer is extrapolating, and the anchor's scores
   are answered as they are. Chebyshev's inequality bounds the training rows beyond 8
   deviations at 1/64, so the default rarely fires on data like the training data.
2. **Otherwise the learned scorer picks only inside the region.** The region is every
   candidate the anchor itself rates within `margin` of its best, in its own score units (the
   shipped anchor, weighted-score, scores in fractions of the request's own SLO targets and
   budget, so 0.1 is a tenth of a target), whose estimated TTFT is also within `ttft_slack`
   of the anchor's pick's (the issue's light-load goal: mean TTFT within 10%). When the
   learned scorer's own pick lies in the region, nothing changes: its scores are answered as
   they are. When it does not, the learned scorer disagrees with the anchor by more than the
   anchor's estimates allow, and the anchor's scores are answered instead.

So every pick is either the anchor's own or one the anchor rates within `margin` of it and no
slower to first token than `ttft_slack` more, in its own estimates: per decision, the guarded
scorer can lose to its anchor only by what the anchor cannot tell apart. Over a run, those
near-ties still change the state later decisions see, so at heavy load the guarded scorer's
attainment moves around the anchor's by more than per-decision ties suggest
(docs/learned-policy.md, "The trust region", has the figures). Alternatives considered: a
residual (the learned score added to the anchor's) bounds nothing where the learned term is
large; a gate measured on validation bounds only validation's fleets; keeping the learned
scorer's favourite of the region when its own pick lies outside it (a clamp) lost more than
falling back did on the probe that chose between them (in the guide).

Each decision's verdict (`inside`; `outside`: the learned pick was not, and the anchor
decided; `out_of_distribution`) is left on the object, and counted, so the engine's receipt and
`explain` show when the guard acted (`optimizer.decide.explain.guard_note`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates

INSIDE = "inside"
OUTSIDE = "outside"
OUT_OF_DISTRIBUTION = "out_of_distribution"
VERDICTS = (INSIDE, OUTSIDE, OUT_OF_DISTRIBUTION)


@dataclass(frozen=True, slots=True)
class Region:
    """The trust region's settings (policy.json's `trust_region` object may set each)."""

    margin: float = 0.1
    """Anchor score below its best a candidate may be and stay in the region."""
    ttft_slack: float = 0.1
    """Relative excess of estimated TTFT over the anchor's pick a candidate may have."""
    z_max: float = 8.0
    """Standard deviations from the training mean beyond which a feature is out of
    distribution."""

    @classmethod
    def of(cls, settings: dict[str, Any]) -> Region:
        """Settings from policy.json; ValueError naming an unknown or invalid one."""
        unknown = set(settings) - {"anchor", "margin", "ttft_slack", "z_max"}
        if unknown:
            raise ValueError(f"unknown trust_region setting(s): {', '.join(sorted(unknown))}")
        values: dict[str, float] = {}
        for key in ("margin", "ttft_slack", "z_max"):
            if key not in settings:
                continue
            value = settings[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"trust_region.{key} must be a number >= 0, got {value!r}")
            values[key] = float(value)
        return cls(**values)


class TrustRegionPolicy(Policy):
    """`learned`'s scores when its pick lies in the region around `anchor`'s, else `anchor`'s
    (module docstring).
    `shift`/`scale`: the training rows' per-feature mean and deviation (None: no
    out-of-distribution test). One object per decision stream: it keeps the last verdict."""

    def __init__(
        self,
        learned: Policy,
        anchor: Policy,
        region: Region,
        shift: np.ndarray | None,
        scale: np.ndarray | None,
    ) -> None:
        self.learned = learned
        self.anchor = anchor
        self.region = region
        self.name = learned.name
        self._shift = shift
        # Dividing by a zero deviation (a feature constant in training) would flag every
        # other value; a deviation of 1 makes z the raw distance instead.
        self._scale = None if scale is None else np.where(scale > 0, scale, 1.0)
        self.verdict = ""
        self.counts: Counter[str] = Counter()

    def out_of_distribution(self, c: Candidates) -> bool:
        """Whether any candidate's feature row is beyond `z_max` deviations on any feature."""
        if self._shift is None or self._scale is None:
            return False
        z = np.abs(c.rows() - self._shift) / self._scale
        return bool((z > self.region.z_max).any())

    def inside(self, c: Candidates, anchor: np.ndarray) -> np.ndarray:
        """The region: a bool per candidate (the anchor's own pick always in it)."""
        best = int(np.argmax(anchor))
        ttft = c.est.ttft_s
        return (anchor >= anchor[best] - self.region.margin) & (
            ttft <= ttft[best] * (1.0 + self.region.ttft_slack)
        )

    def score(self, c: Candidates) -> np.ndarray:
        anchor = np.asarray(self.anchor.score(c), dtype=np.float64)
        if self.out_of_distribution(c):
            return self._judged(OUT_OF_DISTRIBUTION, anchor)
        learned = np.asarray(self.learned.score(c), dtype=np.float64)
        region = self.inside(c, anchor)
        if region[int(np.argmax(learned))]:
            return self._judged(INSIDE, learned)
        return self._judged(OUTSIDE, anchor)

    def _judged(self, verdict: str, scores: np.ndarray) -> np.ndarray:
        self.verdict = verdict
        self.counts[verdict] += 1
        return scores
