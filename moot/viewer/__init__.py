"""`moot view`: a local web viewer of every run and experiment under a folder, live while runs are
being written, with run-to-run comparison, and the same pages as a static site (`--bundle`).

- moot.viewer.paths: URL paths to files under the served folder, refusing anything outside it;
- moot.viewer.catalog: the runs and experiments under the folder, each summarised from its
  run.json, results.jsonl and the tails of its unfinished transcripts (cached by file stamps);
- moot.viewer.units: one run's units as table rows, their filters, and the facts read from their
  transcripts (indexed in the background, so the first page of a large run is quick);
- moot.viewer.figures: headline metrics with their intervals and paired differences;
- moot.viewer.pages: every page, server-rendered from Jinja templates (autoescaped), a unit through
  its protocol's view (moot.views.unit) like the exports;
- moot.viewer.live: server-sent events for pages of runs being written;
- moot.viewer.server: the aiohttp application (read-only, 127.0.0.1, CSP without inline scripts);
- moot.viewer.bundle: the same pages written as files;
- moot.viewer.seats: a person's seat at a running run (`moot run --human SEAT --human-from browser`);
- moot.viewer.rating: `moot annotate RUN --browser`, blind rating on a page of its own server, in
  the seat's look (its templates and script).

The viewer names no protocol: every protocol-specific word comes from the protocol's contract.
"""
