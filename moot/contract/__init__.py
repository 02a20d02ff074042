"""The protocol contract: what a deliberation protocol declares, and the registry that checks it."""
