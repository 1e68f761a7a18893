"""Locus optimizer: topology and trace loading, fleet simulator, policies, RL training.

This package never imports Django; the console uses it as a library.
"""
