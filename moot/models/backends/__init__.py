"""Model backends, one package each (moot.models.providers registers them, one line each)."""
