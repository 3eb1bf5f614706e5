"""Where a Markdown or reStructuredText document has prose and where it has code.

A rule on documents reads them by region: a `TODO` in prose is a note the author left, in a
code sample it is part of the sample; `0 passed` in a console block is a run's output, in a
sentence it is a quotation. This is not a full parser, only the block structure those
rules need: fenced and indented code blocks in Markdown; literal blocks (a paragraph that
ends in `::`) and code directives in reStructuredText.

Lines are the file's ``\\n``-separated lines (a trailing ``\\r`` dropped), numbered as
:attr:`SourceFile.lines` numbers them, so a row here is a row a finding can name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePath

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd", ".mkdn", ".mdx"})
RST_SUFFIXES = frozenset({".rst", ".rest"})

# A code block's language, as its fence or directive names it, that shows a program's
# output rather than source code: a console session, a log, plain text, or no name at all.
OUTPUT_LANGUAGES = frozenset(
    {
        "",
        "text",
        "txt",
        "plain",
        "plaintext",
        "none",
        "nohighlight",
        "output",
        "out",
        "log",
        "console",
        "terminal",
        "session",
        "shell-session",
        "shellsession",
        "sh-session",
        "bash",
        "sh",
        "shell",
        "zsh",
        "fish",
        "powershell",
        "pwsh",
        "ps1",
        "bat",
        "batch",
        "cmd",
        "doscon",
        "pycon",
        "pytb",
        "ansi",
        "pytest",
    }
)


@dataclass(frozen=True)
class Line:
    """One line of a document. ``language`` is None for prose; for a line of a code block
    it is the block's language, lower case ("" when the block names none)."""

    row: int  # 0-based
    text: str
    language: str | None = None

    @property
    def is_code(self) -> bool:
        return self.language is not None


def markup_of(path: str) -> str | None:
    """``markdown`` or ``rst`` by the file's suffix, else None (plain text)."""
    suffix = PurePath(path).suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in RST_SUFFIXES:
        return "rst"
    return None


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as :attr:`SourceFile.lines` counts them (``str.splitlines``
    also breaks at form feeds and lone carriage returns, and would number rows apart)."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def document_lines(text: str, markup: str | None) -> list[Line]:
    """Every line of ``text``, with the language of the code block it is in, if any."""
    lines = split_lines(text)
    if markup == "markdown":
        return _markdown(lines)
    if markup == "rst":
        return _rst(lines)
    return [Line(row, line) for row, line in enumerate(lines)]


# ------------------------------------------------------------------------------- Markdown

_FENCE_OPEN = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`]*)$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s")


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence) and not stripped.strip(fence[0])


def fenced_blocks(lines: list[str]) -> Iterator[tuple[int, int]]:
    """``(first, last)`` rows of each fenced block (```` ``` ```` or ``~~~``), fences
    included; a block never closed runs to the end."""
    first = -1
    fence = ""
    for row, line in enumerate(lines):
        if fence:
            if _closes(line, fence):
                yield first, row
                fence = ""
        elif opening := _FENCE_OPEN.match(line):
            first, fence = row, opening.group(2)
    if fence:
        yield first, len(lines) - 1


def _language(info: str) -> str:
    """The language a fence's info string or a directive's argument names: its first
    word, without the braces and dot of ``{.python}`` or ``{python}``."""
    words = info.strip().split()
    return words[0].strip("{}.").lower() if words else ""


def _indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def _markdown(lines: list[str]) -> list[Line]:
    out: list[Line] = []
    fence = ""  # the opening fence's run of backticks or tildes while inside a block
    language = ""
    previous_blank = True
    in_list = False  # an indented line after a list item continues the item
    indented_code = False
    for row, line in enumerate(lines):
        if fence:
            out.append(Line(row, line, language))  # the closing fence too
            if _closes(line, fence):
                fence = ""
            previous_blank = False
            continue
        opening = _FENCE_OPEN.match(line)
        if opening and not (indented_code and _indent(line) >= 4):
            fence, language = opening.group(2), _language(opening.group(3))
            out.append(Line(row, line, language))
            indented_code = False
            previous_blank = False
            continue
        blank = not line.strip()
        if blank:
            out.append(Line(row, line, "" if indented_code else None))
            previous_blank = True
            continue
        if _indent(line) >= 4 and (indented_code or (previous_blank and not in_list)):
            indented_code = True
            out.append(Line(row, line, ""))
            previous_blank = False
            continue
        indented_code = False
        if _LIST_ITEM.match(line):
            in_list = True
        elif previous_blank and _indent(line) == 0:
            in_list = False
        out.append(Line(row, line))
        previous_blank = False
    return out


# -------------------------------------------------------------------- reStructuredText

_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+([\w:.+-]+)::(.*)$")
# Directives whose body is code or a program's output, not prose.
_CODE_DIRECTIVES = frozenset(
    {
        "code",
        "code-block",
        "sourcecode",
        "literalinclude",
        "parsed-literal",
        "doctest",
        "testcode",
        "testoutput",
        "ipython",
        "jupyter-execute",
        "highlight",
        "prompt",
    }
)
_DIRECTIVE_DEFAULT_LANGUAGE = {"doctest": "pycon", "testoutput": "output", "testcode": "python"}


def _rst(lines: list[str]) -> list[Line]:
    out: list[Line] = []
    block_indent = -1  # inside a code block: the indentation its body must exceed
    language = ""
    pending: tuple[int, str] | None = None  # a block opens after this indentation
    for row, line in enumerate(lines):
        blank = not line.strip()
        indent = _indent(line)
        if block_indent >= 0:
            if blank or indent > block_indent:
                out.append(Line(row, line, language))
                continue
            block_indent = -1
        if pending is not None:
            if blank:
                out.append(Line(row, line, pending[1]))
                continue
            opener_indent, lang = pending
            pending = None
            if indent > opener_indent:
                block_indent, language = opener_indent, lang
                out.append(Line(row, line, language))
                continue
        directive = _DIRECTIVE.match(line)
        if directive and directive.group(2).lower() in _CODE_DIRECTIVES:
            name = directive.group(2).lower()
            lang = _language(directive.group(3)) or _DIRECTIVE_DEFAULT_LANGUAGE.get(name, "")
            out.append(Line(row, line, lang))
            pending = (indent, lang)
            continue
        out.append(Line(row, line))
        if line.rstrip().endswith("::") and not directive:
            pending = (indent, "")  # "Output::" and a paragraph ending "::" open a literal
    return out


# -------------------------------------------------------------------------- inline quotes

# Inline code may run across a line break inside a paragraph; so may a quotation in
# double or typographic quotes (single quotes are too often apostrophes to trust there).
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_RST_SUBSTITUTION = re.compile(r"\|[^|\s](?:[^|\n]*[^|\s])?\|(?=\W|$)")
_QUOTED = re.compile(
    r"\"[^\"]+\"|“[^”]+”|‘[^’]+’|«[^»]+»|「[^」]+」|『[^』]+』"
    r"|(?<![\w'])'[^'\n]+'(?![\w'])"
)

BLANKED = "\ue000"  # a private-use character, which prose does not use


def _blank_out(text: str, pattern: re.Pattern[str]) -> str:
    """Each match of ``pattern`` replaced with as many :data:`BLANKED` as it has
    characters (line breaks kept), so offsets keep their meaning and a quotation reads as
    one word."""
    return pattern.sub(lambda m: re.sub(r"[^\n]", BLANKED, m.group(0)), text)


def without_quotations(text: str) -> str:
    """``text`` with what it puts in quotation marks blanked out: "…", “…”, ‘…’, «…»,
    「…」, and '…' where the quotes are not apostrophes."""
    return _blank_out(text, _QUOTED)


def unquoted_prose(lines: list[Line], markup: str | None) -> list[str]:
    """The text of each line with its inline code (Markdown `` `x` ``, reStructuredText
    ``` ``x`` ``` and roles), reStructuredText substitutions (``|name|``) and quotations
    blanked out, read a paragraph at a time; a line of code is left as it is."""
    out = [line.text for line in lines]
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and not lines[end].is_code and lines[end].text.strip():
            end += 1
        if end == start:
            start += 1
            continue
        paragraph = _blank_out("\n".join(out[start:end]), _CODE_SPAN)
        if markup == "rst":
            paragraph = _blank_out(paragraph, _RST_SUBSTITUTION)
        out[start:end] = without_quotations(paragraph).split("\n")
        start = end
    return out
