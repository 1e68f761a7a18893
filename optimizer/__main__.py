"""Entry point of `python -m optimizer`."""

from optimizer.cli import main

raise SystemExit(main())
