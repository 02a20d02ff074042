"""Speaker-selection policies: pure functions from the conversation so far to the next speaker."""

from moot.speaker_selection.conference import (
    ConferencePlan, PolicyError, Step, Turn, next_step, walk,
)

__all__ = ["ConferencePlan", "PolicyError", "Step", "Turn", "next_step", "walk"]
