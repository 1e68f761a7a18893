"""The decision kernel: a fleet as columns, one request's candidates as columns, and what a
live engine knows of its nodes. Shared by the console's engine, the simulator, the Gymnasium
env and the benchmarks (docs/decision-kernel.md)."""
