"""The browser dashboard: serves the built single-page app (frontend/dist) for its routes."""
