"""Calibration: fit a fleet's profiles and link RTTs to what was observed (docs/twin.md)."""

from optimizer.calibration.run import (
    DEFAULT_MIN_SAMPLES,
    CalibrationResult,
    NotEnoughData,
    calibrate,
)

__all__ = ["DEFAULT_MIN_SAMPLES", "CalibrationResult", "NotEnoughData", "calibrate"]
