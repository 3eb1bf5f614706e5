"""Placeholders: code and documents that promise work and contain none (REF101–REF103)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from tree_sitter import Node

from referee.checks.models import Severity
from referee.checks.nodes import MARKER, excerpt, is_docstring, raised_name, statements
from referee.checks.project import base_name, module_aliases
from referee.checks.pymodule import Function, PythonModule
from referee.checks.rule import Context, Violation
from referee.checks.shape.markup import (
    Line,
    document_lines,
    markup_of,
    unquoted_prose,
)

_EXEMPT_DECORATORS = frozenset(
    {
        "abstractmethod",
        "abstractproperty",
        "abstractclassmethod",
        "abstractstaticmethod",
        "overload",
        "group",  # click/typer group callbacks run before subcommands; empty is normal
        "hookspec",  # pluggy / pytest hook specifications: the signature is the spec
        "hookimpl",
    }
)
# `hookspec = pluggy.HookspecMarker("project")`: the name it binds marks hook specs.
_HOOK_MARKER = re.compile(r"\bHook(?:spec|impl)Marker\s*\(")
# A docstring that says the body is meant to be empty: "Does nothing by default",
# "Override to ...", "Hook to display ...", "No-op.", "Don't write."
_SAYS_EMPTY = re.compile(
    r"\b(?:nothing|no[- ]?op|noop|do(?:es)?\s*n[o']t|don't|override|overridden"
    r"|hooks?|by default|intentionally|deliberately|ignored?)\b",
    re.IGNORECASE,
)
# A module-level function has no subclass to override it: only plain words will do.
_SAYS_EMPTY_PLAINLY = re.compile(
    r"\b(?:does nothing|do nothing|nothing to (?:do|be done)|no[- ]?op|noop|intentionally"
    r"|deliberately)\b",
    re.IGNORECASE,
)
# An annotation a function that returns nothing satisfies: no value was promised.
_NO_VALUE = re.compile(r"\b(?:None|NoReturn|Never)\b")

_ABC_META = re.compile(r"metaclass\s*=\s*(?:abc\.)?ABCMeta\b")
_SKIP = re.compile(r"(^|\.)skip$")
_CLICK_COMMAND = re.compile(r"(?:^|\.)command$")
_SPEC_MODULE = re.compile(r"^\w+\s*=\s*(?:\w+\.)?HookspecMarker\(", re.MULTILINE)


def _is_spec_module(text: str) -> bool:
    # asked once per function: the substring test keeps the regex off most files (a
    # multiline search of the whole text per function was a third of a cold check)
    return "HookspecMarker" in text and _SPEC_MODULE.search(text) is not None


def _decorator_exempt(module: PythonModule, fn: Function) -> bool:
    markers = _hook_markers(module)
    if fn.class_ is None and fn.parent is None and _is_spec_module(module.source.text):
        # A module that makes a HookspecMarker is a hook specification module: pluggy's
        # add_hookspecs(module) takes its functions, decorated or not (pytest's own).
        return True
    for name in fn.decorators:
        last = name.rsplit(".", 1)[-1]
        if last in _EXEMPT_DECORATORS or name in markers:
            return True
        # `@click.command(cls=AliasedGroup)`: a group's callback, by another name
        if _CLICK_COMMAND.search(name) and "cls=" in _decorator_text(module, fn, name):
            return True
    return False


def _decorator_text(module: PythonModule, fn: Function, name: str) -> str:
    parent = fn.node.parent
    if parent is None or parent.type != "decorated_definition":
        return ""
    for child in parent.named_children:
        text = module.source.node_text(child)
        if child.type == "decorator" and text.lstrip("@").startswith(name):
            return text
    return ""


def _hook_markers(module: PythonModule) -> frozenset[str]:
    """Top-level names bound to a pluggy ``HookspecMarker(...)``/``HookimplMarker(...)``."""
    found = module.__dict__.get("_hook_markers")
    if found is None:
        aliases = module_aliases(module.source) if "Marker" in module.source.text else {}
        found = frozenset(name for name, value in aliases.items() if _HOOK_MARKER.search(value))
        module.__dict__["_hook_markers"] = found
    return found


def _in_type_checking(fn: Function) -> bool:
    """Inside ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): a declaration for the
    type checker, which the running program never sees."""
    node = fn.node.parent
    child = fn.node
    while node is not None:
        if node.type == "if_statement" and node.child_by_field_name("consequence") == child:
            condition = node.child_by_field_name("condition")
            if condition is not None and _source_text(condition).endswith("TYPE_CHECKING"):
                return True
        child, node = node, node.parent
    return False


def _interface_class(ctx: Context, module: PythonModule, fn: Function) -> bool:
    """Methods of protocols, ABCs and classes that a subclass overrides — in this file
    (through a generic base, ``Base[int]``, or an alias, ``Alias = Base``) or anywhere
    in the project (the index's view) — are declarations by design, not placeholders."""
    cls = fn.class_
    if cls is None:
        return False
    names = {base_name(base) for base in cls.bases}
    superclasses = cls.node.child_by_field_name("superclasses")
    declared = module.source.node_text(superclasses) if superclasses is not None else ""
    if names & {"Protocol", "ABC"} or _ABC_META.search(declared):
        return True
    if (cls.name, fn.name) in ctx.project.overridden:
        return True
    aliases = _class_aliases(module)
    return any(
        other.class_ is not None
        and other.class_ is not cls
        and any(
            base_name(aliases.get(base_name(base), base)) == cls.name for base in other.class_.bases
        )
        for other in module.functions
        if other.name == fn.name
    )


def _class_aliases(module: PythonModule) -> dict[str, str]:
    found = module.__dict__.get("_class_aliases")
    if found is None:
        found = module_aliases(module.source)
        module.__dict__["_class_aliases"] = found
    return found  # type: ignore[no-any-return]


def _doctest_calls_itself(module: PythonModule, fn: Function) -> bool:
    """Whether the docstring's examples call the function itself (``>>> f(1)``): then they
    specify it — the body still has to be written — rather than test other code."""
    docstring = module.source.node_text(fn.statements[0])
    call = re.compile(rf"(?:>>>|\.\.\.)[^\n]*\b{re.escape(fn.name)}\s*\(")
    return call.search(docstring) is not None


def placeholder_kind(module: PythonModule, fn: Function) -> tuple[str, bool, bool] | None:
    """``(what the body is, has a TODO marker, has a docstring)``, or None when the body
    does real work or a comment says the emptiness is meant."""
    source = module.source
    if fn.node.has_error:
        return None  # an unparsed body proves nothing
    doctest = module.has_doctest(fn)
    body = fn.statements
    docstring = bool(body) and is_docstring(body[0])
    if docstring:
        body = body[1:]
    kinds = []
    for stmt in body:
        if stmt.type == "pass_statement":
            kinds.append("`pass`")
        elif (
            stmt.type == "expression_statement"
            and stmt.named_child_count == 1
            and (stmt.named_children[0].type == "ellipsis")
        ):
            kinds.append("`...`")
        elif stmt.type == "raise_statement" and raised_name(source, stmt) == "NotImplementedError":
            kinds.append("`raise NotImplementedError`")
        else:
            return None
    marker = next(
        (m.group(1) for c in fn.comments if (m := MARKER.search(source.node_text(c)))), None
    )
    if fn.comments and not marker:
        return None  # "pass  # nothing to release": the author says it is meant
    if doctest and (not kinds or not _doctest_calls_itself(module, fn)):
        # a docstring of doctests is a test of other code; but `pass` or `raise
        # NotImplementedError` under examples of the function itself is a stub
        return None
    if not kinds:
        kinds.append("a docstring" if docstring else "comments")
    what = " and ".join(dict.fromkeys(kinds))
    if marker:
        what += f" with a {marker} marker"
    return what, marker is not None, docstring


def placeholder_body(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a function whose body is only `pass`, `...`, `raise NotImplementedError`, a
    docstring, or a `TODO`/`FIXME` comment — a stub that looks like an implementation.

    Abstract methods, `@overload` signatures (a trailing comment on the decorator
    included), hook specifications (pluggy's and pytest's `@hookspec`, any name bound to
    `HookspecMarker(...)`, and every module-level function of a module that binds one),
    definitions under `if TYPE_CHECKING:`, `Protocol` and ABC members, methods that a
    subclass overrides — in the same file, through a generic (`Base[int]`) or aliased
    base, or in another module of the project (the project index) — dunder methods
    (`__init__`, `__exit__`, ...) and `.pyi` stubs are declarations by design and are
    not flagged. A body with an explanatory comment (`pass  # nothing to release`) or a
    docstring that says it is empty on purpose ("Does nothing by default", "Override to
    ...", "Hook to ...", "No-op") is taken as meant, and so are a visitor's empty
    `visit_X`/`depart_X` method and a click group's callback (`@click.group`,
    `@click.command(cls=AliasedGroup)`). Nested
    functions, and every function but the tests in a test module, a `conftest.py` or a
    file under a `test`/`tests`/`testing` directory (fixtures, support modules), are
    flagged only with a `TODO`, `FIXME`, `XXX` or `TBD` marker: dummy callables are what
    tests are made of. A docstring with doctest examples (`>>>`) is a test, not a
    placeholder — unless the examples call the function itself and the body is `pass`,
    `...` or `raise NotImplementedError`: that is a stub whose examples cannot pass. A
    skipped test is left to `skip-without-reason` (REF121).

    Severity follows "would a maintainer fix it?" (docs/rules/index.md). An error: a
    test that checks nothing (a collected test whose body is `pass`, `...` or a
    docstring, with no fixture or strict `xfail(raises=...)` that checks for it); a
    `TODO`/`FIXME`/`XXX`/`TBD` marker; a return annotation that promises a value
    (`-> int`, not `-> None`) and a body of `pass`, `...` or a docstring (mypy's
    `empty-body`; for a method, `raise NotImplementedError` is the informal way to
    declare it abstract); an undecorated module-level function, not annotated
    `-> None`, that is only a docstring or `raise NotImplementedError`. A warning: the
    rest — methods (hooks, null objects, informal base classes), framework callbacks
    (decorated) and functions annotated `-> None` are often empty by design.

    ## Why it matters
    A stub that compiles and imports is the cheapest way for an author — human or agent —
    to report a task as done. Every later check (tests, the judge) then spends its effort
    on code that does not exist.

    ## Example
    ```python
    def parse_duration(text: str) -> int:
        \"\"\"Return the number of seconds in '1h30m'.\"\"\"
        # TODO: implement
        pass
    ```

    ## Use instead
    ```python
    def parse_duration(text: str) -> int:
        \"\"\"Return the number of seconds in '1h30m'.\"\"\"
        hours, _, minutes = text.rpartition("h")
        return int(hours or 0) * 3600 + int(minutes.removesuffix("m") or 0) * 60
    ```
    If the function is meant to be abstract, say so with `@abc.abstractmethod`.
    """
    if ctx.source.path.endswith(".pyi"):
        return
    module = ctx.module
    for fn in module.functions:
        if (
            (fn.name.startswith("__") and fn.name.endswith("__"))
            or _decorator_exempt(module, fn)
            or _in_type_checking(fn)
        ):
            continue
        violation = _placeholder(ctx, module, fn)
        if violation is not None:
            yield violation


def _placeholder(ctx: Context, module: PythonModule, fn: Function) -> Violation | None:
    """The finding on ``fn`` when its body is a placeholder that is not meant."""
    found = placeholder_kind(module, fn)
    if found is None:
        return None
    what, marker, docstring = found
    if fn.is_test and (any(_SKIP.search(d) for d in fn.decorators) or module.assertion_nodes(fn)):
        # a skipped test is REF121's concern; one whose fixture or strict
        # `xfail(raises=...)` checks for it has a body to do nothing
        return None
    if not marker:
        if not fn.is_test and (fn.is_nested or ctx.in_test_tree):
            return None  # dummies and fixtures are what tests are made of
        if _interface_class(ctx, module, fn):
            return None
        if not fn.is_test and _says_empty(module, fn, docstring):
            return None
    severity = _severity(fn, what, marker, docstring)
    noun = "test" if fn.is_test else "function"
    return Violation(
        span=module.source.node_span(_name_or_node(fn)),
        message=f"{noun} `{fn.name}` is a placeholder: its body is only {what}",
        evidence=module.source.node_text(fn.body),
        severity=severity,
    )


def _says_empty(module: PythonModule, fn: Function, docstring: bool) -> bool:
    """A docstring that says the function does nothing on purpose, or a visitor's
    ``visit_X``/``depart_X`` (an empty one stops the walk there)."""
    if fn.class_ is not None and fn.name.startswith(("visit_", "depart_")):
        return True
    returns = fn.node.child_by_field_name("return_type")
    if not docstring or (returns is not None and not _NO_VALUE.search(_source_text(returns))):
        return False  # a value is promised: no docstring makes an empty body meant
    words = _SAYS_EMPTY if fn.class_ is not None else _SAYS_EMPTY_PLAINLY
    return words.search(module.source.node_text(fn.statements[0])) is not None


def _severity(fn: Function, what: str, marker: bool, docstring: bool) -> Severity | None:
    """Error (None: the rule's default) when a maintainer would fix it: a test that
    checks nothing, a marker saying the work is left, a value promised by the return
    annotation and never returned, a module-level function whose docstring or
    ``raise NotImplementedError`` stands for code not written. A method (a hook, a
    null object, an informal base class's ``raise NotImplementedError``) and a function
    annotated ``-> None`` are often empty by design: a warning."""
    returns = fn.node.child_by_field_name("return_type")
    nothing = returns is not None and _NO_VALUE.search(_source_text(returns)) is not None
    abstract = fn.class_ is not None and "NotImplementedError" in what
    if marker or fn.is_test or (returns is not None and not nothing and not abstract):
        return None
    if (
        not nothing
        and fn.class_ is None
        and not fn.decorators  # `@app.route(...)`: the framework's callback, often empty
        and (docstring or "NotImplementedError" in what)
    ):
        return None
    return Severity.WARNING


def _source_text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def _name_or_node(fn: Function) -> Node:
    return fn.node.child_by_field_name("name") or fn.node


def placeholder_marker(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Reports `TODO`, `FIXME`, `XXX` and `TBD` markers: in Python comments, and in the text
    of a document. Information level; a file or function that is *nothing but* a
    placeholder is an error under `placeholder-document` (REF103) and
    `placeholder-body` (REF101).

    A plain-text file is read line by line, and every marker counts. In Markdown and
    reStructuredText only a marker that is a note counts: one that starts its line, list
    item, table cell, comment or sentence, or follows a label's colon, and goes on to say
    what is left to do or stands alone — `TODO: write this section`, `FIXME later`,
    `<!-- FIXME(ana): … -->`, `Release date: TBD`, a `| TBD |` cell. Prose that talks
    about markers ("flags TODO markers", "remove the obsolete TODO", "TODO tests are
    skipped", "TODO/FIXME"), a marker in inline code or quotation marks, and code blocks
    (a sample's `# TODO`) are left alone.

    ## Why it matters
    A marker is a promise of unfinished work. In a change an agent reports as complete,
    each one is a question for the reviewer: was this meant to ship?

    ## Example
    ```python
    def retry(fn):
        return fn()  # TODO: actually retry
    ```
    ```markdown
    ## Upgrading

    TODO: write this section
    ```

    ## Use instead
    Finish the work, or track it in an issue and link it:
    ```python
    def retry(fn):
        return fn()  # single attempt by design, see issue #42
    ```
    """
    source = ctx.source
    if source.kind == "python":
        for comment in ctx.module.comments:
            match = MARKER.search(source.node_text(comment))
            if match:
                yield Violation(
                    span=source.node_span(comment),
                    message=f"{match.group(1)} marker: {excerpt(source.node_text(comment), 100)}",
                    evidence=source.node_text(comment),
                )
        return
    if is_placeholder_document(source.text):
        return  # REF103 says it louder
    markup = markup_of(source.path)
    lines = document_lines(source.text, markup)
    unquoted = unquoted_prose(lines, markup) if markup else []
    for index, line in enumerate(lines):
        if line.is_code:
            continue  # a code sample's TODO belongs to the sample
        match = (
            MARKER.search(line.text)
            if markup is None
            else next(_notes(lines, unquoted, index), None)
        )
        if match:
            yield Violation(
                span=source.line_span(line.row),
                message=f"{match.group(1)} marker: {line.text.strip()[:120]}",
                evidence=line.text,
            )


# In prose, a marker that is a note starts its clause: the line, a list item, a table cell,
# a comment, a bracket, or what follows a sentence's end or a label's colon ...
_CLAUSE_START = re.compile(
    r"(?:^|[.!?;:]\s|[。！？；：]|\||<!--|-->|\.\.\s|[(\[（【]|\s[-–—]\s)[\s*_~]*$"
)
_LINE_LEAD = re.compile(r"^\s*(?:(?:#{1,6}|[-*+>•]|\d{1,9}[.)]|#\.|\[[ xX]\])\s+)*")
# ... and is followed by what it is about: "TODO: write", "TODO(ana)", "TBD.", "| TODO |",
# "FIXME - flaky", "FIXME later". A marker followed by a word that makes it a name for
# markers ("TODO markers", "TODO tests are skipped", "TODO and FIXME"), or by a slash or
# a comma that lists it ("TODO/FIXME", "TODO, FIXME"), is a word about markers.
_NOTE_FOLLOWS = re.compile(
    r"^[*_~]*(?:\s*$|\s*[:：(（)）\]】.。!！?？;；|…>]|\s*[–—]|\s+-\s|\s+(?!(?i:"
    r"markers?|comments?|notes?|items?|lists?|tests?|tags?|entries|entry|directives?|"
    r"options?|messages?|statements?|keywords?|words?|lines?|flags?|annotations?|"
    r"is|are|was|were|and|or|as|means?|counts?)\b)[^\W\d_])"
)
_ENDS_CLAUSE = re.compile(r"(?:[.!?;:]|[。！？；：]|<!--|-->)[\s*_~]*$")
_STARTS_BLOCK = re.compile(r"^\s*(?:#{1,6}\s|[-*+>•|]\s|\d{1,9}[.)]\s|\.\.\s|<!--)")


def _continues(lines: list[Line], index: int) -> bool:
    """Whether line ``index`` continues the paragraph of the line before it."""
    if index == 0:
        return False
    before, line = lines[index - 1], lines[index]
    return not before.is_code and bool(before.text.strip()) and not _STARTS_BLOCK.match(line.text)


def _starts_clause(lines: list[Line], unquoted: list[str], index: int, at: int) -> bool:
    text = unquoted[index]
    lead = _LINE_LEAD.match(text)
    before = text[lead.end() if lead else 0 : at]
    if before.strip(" \t*_~"):
        return bool(_CLAUSE_START.search(before))
    # First on its line: it starts a clause unless the line wraps a sentence ("... a\nTODO").
    return not _continues(lines, index) or bool(_ENDS_CLAUSE.search(unquoted[index - 1]))


def _ends_clause(lines: list[Line], unquoted: list[str], index: int, at: int) -> bool:
    after = unquoted[index][at:]
    if after.strip():
        return bool(_NOTE_FOLLOWS.match(after))
    # Last on its line: the sentence goes on when the next line continues it in lower case.
    wrapped = index + 1 < len(lines) and _continues(lines, index + 1)
    return not (wrapped and unquoted[index + 1].lstrip()[:1].islower())


def _notes(lines: list[Line], unquoted: list[str], index: int) -> Iterator[re.Match[str]]:
    """The markers on line ``index`` of a Markdown or reStructuredText document that are
    notes the author left, not words in a sentence about markers nor quoted (in inline
    code or quotation marks); ``unquoted``: the lines with quotations blanked out."""
    for match in MARKER.finditer(unquoted[index]):
        if _starts_clause(lines, unquoted, index, match.start()) and _ends_clause(
            lines, unquoted, index, match.end()
        ):
            yield match


_PLACEHOLDER_WORDS = re.compile(
    r"^(todo|tbd|fixme|xxx|wip|placeholder|lorem ipsum.*|coming soon|to be (written|done|"
    r"added|determined)|not (yet )?implemented|n/?a|tba|待定|待补充|待完成|未完成|暂无|略)$",
    re.IGNORECASE,
)
_MARKDOWN_LEAD = re.compile(r"^\s*(#{1,6}\s+|[-*+>]\s+|\d+[.)]\s+)?")
_EDGE_PUNCTUATION = " \t.,:;!?。，：；！？…()（）[]【】\"'`*_~-—<>"


def is_placeholder_document(text: str) -> bool:
    """True when every line of a document is a heading or a placeholder word, and at
    least one line is a placeholder ("# Chapter 2\\n\\nTODO", "TBD.", "待补充")."""
    placeholder_lines = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        heading = line.lstrip().startswith("#")
        content = _MARKDOWN_LEAD.sub("", line).strip(_EDGE_PUNCTUATION)
        if _PLACEHOLDER_WORDS.match(content):
            placeholder_lines += 1
        elif not heading:
            return False
    return placeholder_lines > 0


def placeholder_document(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a file whose whole content is a placeholder: a text document that is only
    headings and words like `TODO`, `TBD`, `placeholder`, `coming soon`, `待补充`; or a
    Python module that is only comments, docstrings and `pass`, with a `TODO`, `FIXME`,
    `XXX` or `TBD` marker among the comments.

    ## Why it matters
    "Write chapter 2" answered with a file that says `TODO` passes every existence check a
    pipeline can make — the file is there, it is non-empty — and proves nothing.

    ## Example
    ```markdown
    # Chapter 2

    TODO
    ```

    ## Use instead
    Write the content, or do not create the file until it exists.
    """
    source = ctx.source
    if source.kind == "text":
        if is_placeholder_document(source.text):
            yield Violation(
                span=source.line_span(0),
                message="document is nothing but a placeholder",
                evidence=source.text.strip()[:200],
            )
        return
    root = source.tree.root_node
    code = [s for s in statements(root) if not is_docstring(s) and s.type != "pass_statement"]
    markers = [c for c in ctx.module.comments if MARKER.search(source.node_text(c))]
    if not code and markers:
        yield Violation(
            span=source.node_span(markers[0]),
            message="module is nothing but a placeholder: only comments and a TODO marker",
            evidence=source.node_text(markers[0]),
        )
