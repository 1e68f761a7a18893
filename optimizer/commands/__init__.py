"""The subcommands of `python -m optimizer` (`optimizer/cli.py` builds their parser)."""
