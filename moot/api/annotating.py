"""A person rating a run's units blind (`moot annotate RUN`): at the terminal, in a notebook, anywhere
a `Rater` answers (the browser's page: moot.viewer.api.rate_in_browser).

Each finished unit's rateable things (its protocol says which: a conference's judge verdicts and
evaluator scores, a labelled item's label) are put to the rater one by one as a seat's questions
(moot.api.seats), with the material the model decided on but never its answer; once the rater has
answered, the model's answers are revealed beside theirs (`Rater.revealed`). Each answer is
appended to RUN/annotations.jsonl (never to a transcript) with the rater's name and the time;
what this rater rated before is skipped, so the same session started again goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from moot.api.options import PathLike
from moot.engine.rating import Rater as Rater, Revealed as Revealed, Todo as Todo, session
from moot.errors import UsageError
from moot.log.annotations import annotations_path
from moot.saved.source import RunSource, open_run


def annotations_file(run: PathLike) -> Path:
    """Where a run folder's annotations are kept (`moot report RUN` reads them)."""
    return annotations_path(Path(run))


def rated_run(run: PathLike) -> RunSource:
    """The run folder to rate, opened; a transcript file is refused (nowhere to keep annotations)."""
    source = open_run(Path(run))
    if not source.is_folder:
        raise UsageError(f"{run}: annotate a run folder (its annotations are kept beside its transcripts)")
    return source


def annotate(run: PathLike, person: Rater, *, rater: Optional[str] = None, limit: Optional[int] = None) -> Todo:
    """One rater's session over the run folder: `rater` is their name (None: `person` is asked for
    it), `limit` the most things rated this time. Returns what it had to rate; a person who leaves
    raises PersonLeft (moot.api.seats), and what they rated is kept."""
    from moot.api.running import blocking

    source = rated_run(run)
    return blocking(lambda: session(source, rater, limit, person))
