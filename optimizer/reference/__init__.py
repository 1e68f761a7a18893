"""The per-node implementation of the decision, kept as the oracle of the vectorised kernel.

Before the kernel (`optimizer.decide`), every decision built one `NodeView` per node, filtered
with `optimizer.constraints`, estimated with `optimizer.estimates` and scored with policies
written per node. Those definitions stay here, unchanged, for two uses only: the parity
property tests (`tests/optimizer/test_kernel_parity.py`: the kernel gives the same mask,
reasons, estimates, rows, scores and pick) and `python -m optimizer bench-decide`, which times
the kernel beside them in one run. Nothing on a decision path imports this package.
"""
