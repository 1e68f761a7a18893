"""Filters: each narrows the candidates (GIE EPP filter plugins); one per file."""
