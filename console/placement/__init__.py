"""Placement decisions: the doors that ask for one (doors/), the in-process engine and its
runtime (engine/), decision records and outcomes, and the read API over them (api/)."""
