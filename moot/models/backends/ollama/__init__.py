"""An Ollama server (`ollama:MODEL`): options, client."""
