"""Views of a run: the timeline, the terminal (live and replay), the document (Markdown, HTML)."""
