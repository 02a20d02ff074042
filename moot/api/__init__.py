"""moot's Python API: what the command line does, as functions a notebook or a script calls.

`import moot` names it (moot/__init__.py imports each part when first used, so importing moot
stays instant): running (moot.api.running), reading saved runs (moot.api.saved), data frames
(moot.api.frames), and re-scoring, exporting and reporting (moot.api.outputs). Experiment grids run
their cells through it, so their functions stand above it (moot.experiment.api). The command line
(moot.cli) parses arguments, calls these and prints; docs/api.md is the guide.
"""
