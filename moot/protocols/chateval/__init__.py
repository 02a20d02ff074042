"""ChatEval: a referee panel's multi-agent debate (moot.protocols.chateval.protocol)."""
