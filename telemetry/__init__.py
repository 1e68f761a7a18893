"""Telemetry: ingest (push, scrape, remote-write), time-series storage, fresh node state, SLAs."""
