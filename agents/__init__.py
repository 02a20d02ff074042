"""Agent roles: prompt templates (data) and the factories that build AutoGen agents from them."""
