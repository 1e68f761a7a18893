"""Measured results as generated Markdown tables (docs/results/README.md).

Each table of `registry.TABLES` names the shell script that writes its report files under
`docs/results/reports/<slug>/` and the function that renders them; `python -m tools.results`
renders every table into `docs/results/` and the README's results table. Only the standard
library is imported here, so rendering needs no installed project.
"""
