"""Scorers: each gives every candidate a score, higher is better (GIE EPP scorer plugins);
one per file, with the learned scorer's loader and the guard."""
