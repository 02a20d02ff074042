"""LLM negotiation for sentiment analysis (Sun et al.) — one text."""
