"""The living demo: a simulated fleet that serves real exporter formats, takes its placements
from the real decision API and reports outcomes, so the console runs as in production."""
