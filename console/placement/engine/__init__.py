"""The decision engine: everything a decision needs lives in memory (GUIDE rule 2)."""
