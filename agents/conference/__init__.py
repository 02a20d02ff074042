"""The decision conference's agents: their context windows, transcript document, measures, reading."""
