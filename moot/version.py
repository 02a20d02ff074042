"""moot's version, at the bottom of the layers: run.json and provenance record it without importing the API."""

__version__ = "0.1.0"
