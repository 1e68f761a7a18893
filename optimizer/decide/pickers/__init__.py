"""Pickers: the pick and its fallbacks from the scores, and the rollout arm of a decision."""
