"""Reading a file into text the rules can trust, and parsing it with tree-sitter.

Everything that can go wrong with a file on disk (binary content, an undecodable encoding,
a size past the limit) is decided here and becomes an :class:`Unreadable` with a reason;
rules only ever see decoded text.
"""

from __future__ import annotations

import codecs
import functools
import io
import stat
import tokenize
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePath

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Tree

from referee.checks.models import Location, Span

PYTHON = Language(tree_sitter_python.language())
PYTHON_SUFFIXES = frozenset({".py", ".pyi", ".pyw"})

_BINARY_SNIFF = 8192


class Unreadable(Exception):
    """The file cannot be checked; ``reason`` says why in words a user understands."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def kind_of(path: str) -> str:
    """``python`` for Python sources and stubs, ``text`` for everything else."""
    return "python" if PurePath(path).suffix.lower() in PYTHON_SUFFIXES else "text"


def read_bytes(path: Path, max_size: int, *, named: bool = False) -> bytes:
    """A file's bytes for checking: never more than ``max_size`` (a file past it is
    :class:`Unreadable` without being read into memory), and never a FIFO, socket or device
    met while walking a directory — reading one would wait forever. A path the user
    ``named`` may be one (``referee check <(git show HEAD:x.py)``); it is still read only
    up to the limit. ``OSError`` (missing, a directory, no permission) passes through.
    """
    info = path.stat()
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(21, "Is a directory", str(path))
    if not stat.S_ISREG(info.st_mode):
        if not named:
            raise Unreadable("not a regular file (a FIFO, socket or device)")
    elif info.st_size > max_size:
        raise Unreadable(f"larger than max-file-size ({info.st_size:,} > {max_size:,} bytes)")
    with path.open("rb") as handle:
        data = handle.read(max_size + 1)
    if len(data) > max_size:
        raise Unreadable(f"larger than max-file-size (more than {max_size:,} bytes)")
    return data


def decode(data: bytes, kind: str, max_size: int) -> str:
    """Bytes to text, or :class:`Unreadable`.

    Python files honour PEP 263 coding declarations and BOMs, as the interpreter does;
    other files must be UTF-8.
    """
    if len(data) > max_size:
        raise Unreadable(f"larger than max-file-size ({len(data):,} > {max_size:,} bytes)")
    if b"\0" in data[:_BINARY_SNIFF]:
        raise Unreadable("binary file (contains NUL bytes)")
    encoding = encoding_of(data, kind)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise Unreadable(
            f"not valid {encoding.removesuffix('-sig')}: byte 0x{data[exc.start]:02x} "
            f"at offset {exc.start}"
        ) from None
    except LookupError:
        raise Unreadable(f"unknown encoding {encoding!r} in coding declaration") from None


def encoding_of(data: bytes, kind: str) -> str:
    """The codec :func:`decode` reads ``data`` with; ``text.encode(encoding_of(data, kind))``
    writes a fixed text back as it was stored: same coding declaration, BOM kept or left
    out as it was."""
    if kind == "python":
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:
            if not exc.msg.startswith("invalid or missing encoding declaration"):
                raise Unreadable(f"bad coding declaration: {exc.msg}") from None
            # No declaration, and a first or second line that is not UTF-8: say which byte.
            encoding = "utf-8"
        return encoding
    return "utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"


@functools.cache
def python_parser() -> Parser:
    """One parser per process: tree-sitter parsers are cheap to reuse, not to build."""
    return Parser(PYTHON)


@dataclass
class SourceFile:
    """Decoded text of one file plus lazily built views of it."""

    path: str
    text: str
    kind: str = ""
    _tree: Tree | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.kind:
            self.kind = kind_of(self.path)

    @cached_property
    def data(self) -> bytes:
        """The UTF-8 encoding tree-sitter parses; node offsets index into this."""
        return self.text.encode("utf-8", "surrogatepass")

    @cached_property
    def lines(self) -> list[bytes]:
        return self.data.split(b"\n")

    @property
    def tree(self) -> Tree:
        if self._tree is None:
            self._tree = python_parser().parse(self.data)
        return self._tree

    def node_text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def location(self, row: int, byte_column: int) -> Location:
        """tree-sitter's (0-based row, byte column) to a 1-based character location."""
        line = self.lines[row] if row < len(self.lines) else b""
        column = len(line[:byte_column].decode("utf-8", "replace")) + 1
        return Location(line=row + 1, column=column)

    def node_span(self, node: Node) -> Span:
        start, end = node.start_point, node.end_point
        return Span(
            start=self.location(start.row, start.column), end=self.location(end.row, end.column)
        )

    def line_span(self, row: int) -> Span:
        """The whole of line ``row`` (0-based)."""
        line = self.lines[row] if row < len(self.lines) else b""
        return Span(start=self.location(row, 0), end=self.location(row, len(line)))
