"""The side-by-side router benchmark (issue #27): `make bench-routers`, run by
`tests/bench/bench_routers.py`; see `cli.py` for the run and `report.py` for the figures."""
