"""What a results table is: its reports, the script that writes them, and how it renders."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

REPORTS_DIR = "docs/results/reports"


class Report(NamedTuple):
    """One report file: its name without `.json`, and its parsed JSON."""

    name: str
    data: Any


Renderer = Callable[[Sequence[Report]], str]


@dataclass(frozen=True)
class Table:
    """One generated table.

    `script` is the shell script, run from the repository root with `bash -eu`, that writes
    every report of the table into `docs/results/reports/<slug>/`; it is printed above the
    table and is exactly what `python -m tools.results --run SLUG` runs. `render` turns the
    reports, sorted by file name, into Markdown.
    """

    slug: str
    page: str
    title: str
    about: str
    script: str
    render: Renderer

    @property
    def reports_dir(self) -> str:
        return f"{REPORTS_DIR}/{self.slug}"


@dataclass(frozen=True)
class Page:
    """One page of docs/results/: `docs/results/<slug>.md`, its tables in registry order."""

    slug: str
    title: str
    about: str
