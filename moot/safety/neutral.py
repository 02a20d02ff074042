"""Text written by a model, a server, a dataset or a run folder, made safe for where it is shown.

The one neutralising step of every writer, one function per kind of output (`terminal_safe`,
`markdown_safe`, `html_safe`, `csv_safe`, `latex_safe`, `plot_safe`); a writer calls its kind's
function on every string it did not write itself. Every kind starts from the same plain text:

- control characters and escape sequences (colours, cursor moves, title changes, hyperlinks) are
  removed, `\\r` becomes a newline, newlines and tabs stay;
- the bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) are removed,
  so a name cannot be shown in an order other than the one it is stored in ("Trojan Source");
- a lone surrogate (possible in JSON) becomes U+FFFD, so writing the text cannot fail.

Then, per kind:

- terminal: the plain text (moot's own colours are added after);
- markdown: only what would change the rendering (CommonMark and GitHub's extensions) is escaped,
  so the file stays readable: code, emphasis, links, images, tables, strikethrough, math, mentions
  and autolinks everywhere, and what would start a block (heading, list, quote, rule) at the
  start; `<`, `>` and entity-like `&` become entities, so raw HTML is text. Whitespace is one line;
- html: html.escape (quotes included);
- csv: a text cell that a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, a
  tab or a carriage return, as OWASP lists them, or their full-width forms) gets a `'` in front,
  as OWASP recommends; numbers, and text that is a plain number, are left as they are;
- latex: every special character escaped (`\\ & % $ # _ { } ~ ^ < > | [ ]`), moot's own table
  symbols (Δ ± † – α) as pdflatex takes them, whitespace one line;
- plot: the plain text with tabs as spaces (moot.report.plots draws it without mathtext, with a
  font that has each character or a replacement character; moot.kit._fonts).
"""

from __future__ import annotations

import html
import re

# CSI / OSC / DCS ... sequences, then any C0/C1 control except \t and \n.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b.?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")


def plain(text: object) -> str:
    """The step every kind starts from (module docstring)."""
    text = _SURROGATES.sub("\ufffd", str(text))
    text = _ESCAPES.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return _CONTROLS.sub("", text)


def terminal_safe(text: object) -> str:
    """`text` without escape sequences, control or bidirectional-override characters."""
    return plain(text)


# --- Markdown ---------------------------------------------------------------------------------
_MD_ANYWHERE = re.compile(
    r"[\\`*\[\]|~$]"  # escapes, code, emphasis, links and images, table cells, strikethrough, math
    r"|(?<![^\W_])_|_(?![^\W_])"  # `_` emphasises unless inside a word
    r"|@(?=\w)"  # mentions and e-mail autolinks
    r"|(?i:(?<=www)\.|(?<=[^\W_])\.(?=(?:[a-z]{2}|com|net|org|edu|gov|biz|pro|web|xxx|aero|asia|coop|info"
    r"|museum|name|shop|рф)(?![^\W_])))"  # a domain's dot before a TLD linkifiers know
    r"|(?<=[A-Za-z]):(?=//)"  # a scheme's colon (http://)
    r"|(?<![^\s(])/(?=/)"  # a scheme-relative link's first slash (//host)
)
_MD_ENTITIES = re.compile(r"[<>]|&(?=#?\w+;)")
_MD_BLOCK = re.compile(r"#|[-+](?=\s|$)|\d{1,9}([.)])(?=\s|$)")
_MD_RULE = re.compile(r"=+|-+")
_ENTITY = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def markdown_safe(text: object, cell: bool = False) -> str:
    """One line of inert Markdown; a `cell` (of a table, or a heading's text) cannot start a block,
    anything else may (module docstring)."""
    line = " ".join(plain(text).split())
    escaped = _MD_ENTITIES.sub(lambda m: _ENTITY[m.group()[0]], _MD_ANYWHERE.sub(r"\\\g<0>", line))
    if cell:
        return escaped
    if _MD_RULE.fullmatch(escaped):
        return "\\" + escaped
    return _block_start(escaped)


def _block_start(line: str) -> str:
    """`line` with the marker that would start a heading or a list escaped."""
    found = _MD_BLOCK.match(line)
    if found is None:
        return line
    at = found.start(1) if found.group(1) else 0
    return line[:at] + "\\" + line[at:]


# --- the other kinds --------------------------------------------------------------------------
def html_safe(text: object) -> str:
    return html.escape(plain(text), quote=True)


_FORMULA = tuple("=+-@\t\r＝＋－＠")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def csv_safe(value: object) -> object:
    """A CSV cell: text neutralised against formula injection (module docstring); numbers as they are."""
    if value is None or isinstance(value, (int, float)):
        return value
    text = plain(value)
    if text.lstrip(" \n").startswith(_FORMULA) and not _PLAIN_NUMBER.fullmatch(text.strip()):
        return "'" + text
    return text


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}",
          ">": r"\textgreater{}", "|": r"\textbar{}", "[": "{[}", "]": "{]}",
          # moot's own symbols in tables, as pdflatex takes them
          "Δ": r"$\Delta$", "±": r"$\pm$", "†": r"\dag{}", "–": "--", "α": r"$\alpha$"}
_LATEX_SPECIAL = re.compile("[" + re.escape("".join(_LATEX)) + "]")


def latex_safe(text: object) -> str:
    """Text for a LaTeX document (a table cell, a caption): no command, group, math or row break."""
    return _LATEX_SPECIAL.sub(lambda m: _LATEX[m.group()], " ".join(plain(text).split()))


def plot_safe(text: object) -> str:
    return plain(text).replace("\t", " ")
