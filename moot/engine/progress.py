"""A batch's progress in model calls, so its status line moves with every finished call.

Units finish seldom (an item on the embedded model is a dozen calls; a conference a hundred), so a
status line and an ETA counted in finished units stand still for minutes. This counts the calls
recorded as they are recorded (the events a run's listener sees), the calls each finished unit
took (its `run_finished` totals), and from them the calls a unit takes on average: the ETA is the
calls still expected (the units left times that average, less the calls the units in flight
have made) at the rate calls were made so far. Before a unit has finished there is no average,
and no ETA.
"""

from __future__ import annotations

from typing import Optional, Sequence

from moot.log.events import Call, EventBase, RunFinished, RunResumed, RunStarted


class CallProgress:
    """Calls done and expected, for a batch of `total` units of which `done` were done before."""

    def __init__(self, total: int, done: int):
        self.total, self.done = total, done
        self.calls = 0  # recorded this session
        self.finished_calls = 0  # of the units finished this session
        self.finished = 0
        self.running = 0
        self.latest = ""  # `role stage` of the latest call

    def seen(self, events: Sequence[EventBase]) -> bool:
        """Count what was recorded; whether the line has news."""
        news = False
        for event in events:
            if isinstance(event, Call):
                self.calls += 1
                self.latest = f"{event.role} {event.stage}".strip()
                news = True
            elif isinstance(event, (RunStarted, RunResumed)):
                self.running += 1
            elif isinstance(event, RunFinished):
                self.running = max(0, self.running - 1)
                if event.status == "completed":
                    self.finished += 1
                    self.done += 1
                    self.finished_calls += int(event.totals.get("calls", 0))
                news = True
        return news

    @property
    def per_unit(self) -> Optional[float]:
        """Calls a finished unit took, on average (None before one finished)."""
        return self.finished_calls / self.finished if self.finished else None

    def eta(self, elapsed: float) -> Optional[float]:
        """Seconds left: the calls still expected at this session's rate of calls."""
        per_unit = self.per_unit
        if per_unit is None or not self.calls:
            return None
        in_flight = max(0, self.calls - self.finished_calls)
        expected = max(0.0, per_unit * (self.total - self.done) - in_flight)
        return expected * elapsed / self.calls

    def text(self) -> str:
        """`calls 5/12 in flight (judger conclusion)`: the in-flight units' calls against what they
        are expected to take, and the latest call."""
        in_flight = max(0, self.calls - self.finished_calls)
        per_unit = self.per_unit
        expected = f"/{per_unit * max(self.running, 1):.0f}" if per_unit is not None else ""
        latest = f" ({self.latest})" if self.latest else ""
        return f"calls {in_flight}{expected} in flight{latest}"
