"""The decision engine: everything a decision needs lives in memory.

See docs/architecture.md, rule 2: the hot path never waits on the database or the network.
"""
