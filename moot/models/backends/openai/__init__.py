"""OpenAI and OpenAI-compatible servers (`openai:MODEL`): options, client, Batch API."""
