"""Tools run from the repository root: `python -m tools.NAME` (tools/README.md)."""
