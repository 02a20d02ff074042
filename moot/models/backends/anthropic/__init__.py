"""Anthropic's Messages API (`anthropic:MODEL`): options, client."""
