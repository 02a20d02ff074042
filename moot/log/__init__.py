"""The event log: typed, versioned, append-only JSONL transcripts, their reading and their migrations."""
