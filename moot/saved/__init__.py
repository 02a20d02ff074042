"""A saved run, read back: run.json, results rows and transcripts, checked and typed.

The one reader of a run folder (or of one transcript file) for the report, the viewer, the Python
API and the engine. It stands below the contract, so a protocol's report hooks receive a saved run
without the contract importing anything above it; nothing here runs a model or writes a file.
"""

from moot.saved.files import RunFolderError, read_meta, read_record, read_results, result_rows, transcript_of
from moot.saved.records import ResultRow, RunMeta
from moot.saved.source import RunSource, UnitRef, open_run

__all__ = ["ResultRow", "RunFolderError", "RunMeta", "RunSource", "UnitRef", "open_run", "read_meta", "read_record",
           "read_results", "result_rows", "transcript_of"]
