"""moot: LLM deliberation protocols declared in YAML, run on AutoGen, recorded honestly."""

__version__ = "0.1.0"
