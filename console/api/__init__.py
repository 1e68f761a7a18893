"""Pieces shared by every app's REST API: the error shape and the error type."""
