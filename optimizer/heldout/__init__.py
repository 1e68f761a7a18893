"""The held-out suite (issue #26): fleets designed by hand from public descriptions
(`optimizer/topologies/heldout/`), paired with every shipped trace at light, moderate and heavy
load, on which learned policies are judged against the best heuristic and the oracle, and which
training and model selection never see (`optimizer.heldout.guard`).

`python -m optimizer heldout-suite` runs it (`optimizer.commands.heldout`); docs/heldout-suite.md
describes the fleets, the rules and the goals.
"""
