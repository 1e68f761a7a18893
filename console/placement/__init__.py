"""Placement decisions: the in-process engine, decision records, outcomes, the extender."""
