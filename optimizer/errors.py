"""The optimizer's one error type for bad input files."""

from __future__ import annotations


class InputFileError(ValueError):
    """A topology or trace file that cannot be used.

    `problems` holds one human-readable line per problem, each naming the file, the entry
    (or line) and the field, so a CLI can print them and an importer can refuse the whole file.
    """

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__("\n".join(problems))
