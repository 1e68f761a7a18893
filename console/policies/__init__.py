"""Policy versions, their evaluations, staged rollouts (shadow, canary, active) and training."""
