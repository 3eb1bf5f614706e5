"""The CLI of the model layers: ``referee check --judge`` (L2) and ``referee review`` (L3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from referee.checks import review, runner
from referee.checks.cache import default_cache_dir
from referee.checks.config import ConfigError, Settings, discover
from referee.checks.progress import Work
from referee.checks.source import SourceFile, Unreadable, decode, kind_of, read_bytes

err = Console(stderr=True, highlight=False, soft_wrap=True)

EXIT_USAGE = 2


def _baselines(settings: Settings, results: list[runner.FileResult], base: str) -> dict[str, str]:
    """The text at ``base`` of each file that exists there (empty outside a git repository)."""
    from referee.checks.guard import baseline

    try:
        top = baseline.toplevel(settings.root)
        relative = {}
        for result in results:
            try:
                absolute = Path(result.display).resolve()
                relative[result.display] = absolute.relative_to(top).as_posix()
            except ValueError:
                continue
        texts = baseline.read_at(top, base, sorted(set(relative.values())))
    except baseline.GitError:
        return {}
    return {d: t for d, rel in relative.items() if (t := texts.get(rel)) is not None}


def judge_results(
    results: list[runner.FileResult],
    settings: Settings,
    *,
    judge_all: bool,
    base: str,
    texts: dict[str, bytes] | None = None,
    execution: bool | None = None,
    reading: bool = True,
) -> bool:
    """Add L2/L3 findings to ``results`` in place; False when the judge cannot run.

    ``texts``: file contents that are not on disk (``--stdin-filename``), by display name.
    ``execution``: run the execution checks first (mutation, differential; default: the
    ``execution.enabled`` setting); ``reading``: then the reading judge.
    """
    from referee.checks.judge import core
    from referee.checks.judge.backend import BackendError
    from referee.checks.judge.opening import backend_for

    config = settings.config.judge
    run_execution = settings.config.execution.enabled if execution is None else execution
    backend = None
    judged = True
    if reading:
        try:
            core.perspective_instructions(config)
            backend = backend_for(config)
        except (BackendError, ValueError) as exc:
            err.print(
                f"[bold red]referee: the judge (L2) cannot run:[/] {escape(str(exc))}\n"
                "L0/L1 findings are reported as usual.",
                soft_wrap=True,
            )
            if not run_execution:
                return False
            judged = False
    baselines = {} if judge_all else _baselines(settings, results, base)
    candidates = [r for r in results if r.skipped is None]
    oracle_model = files = None
    if run_execution:
        from referee.checks.arbitration.truth import LazyModel
        from referee.checks.execution.run import ProjectFiles

        oracle_model = LazyModel.from_settings(settings.config.arbitration, config)
        files = ProjectFiles(settings)
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task("judging", total=len(candidates))
        for result in candidates:
            source = _source(result, settings, texts)
            if source is None:
                continue

            def show(message: str, _name: str = result.display) -> None:
                bar.update(task, description=f"judging {_name}: {message}")

            work = Work(progress=show)

            decided: set[str] = set()
            support: dict[str, str] = {}
            if run_execution:
                decided, support = _execute(
                    result, source, settings, baselines, files, oracle_model, work
                )
            if backend is None:
                bar.advance(task)
                continue
            if not _read(result, source, settings, backend, baselines, decided, support, work):
                return False
            bar.advance(task)
    return judged


def _source(
    result: runner.FileResult, settings: Settings, texts: dict[str, bytes] | None
) -> SourceFile | None:
    """The checked file's text (``texts``' where given), or None when it cannot be read."""
    path = Path(result.display)
    try:
        kind = kind_of(result.display)
        data = (texts or {}).get(result.display)
        limit = settings.config.max_file_size
        data = data if data is not None else read_bytes(path, limit, named=True)
        text = decode(data, kind, limit)
    except (OSError, Unreadable):
        return None
    return SourceFile(result.display, text, kind)


def _by_place(findings: list[Any]) -> list[Any]:
    return sorted(findings, key=lambda f: (f.span.start.line, f.span.start.column, f.code))


def _execute(
    result: runner.FileResult,
    source: SourceFile,
    settings: Settings,
    baselines: dict[str, str],
    files: Any,
    oracle_model: Any,
    work: Work,
) -> tuple[set[str], dict[str, str]]:
    """The execution checks of one file, their findings added to ``result``: (the
    functions a counterexample rejected, the oracles' support of each)."""
    from referee.checks.execution.run import check_file

    executed = check_file(
        source,
        settings,
        settings.relative(Path(result.display)),
        result.findings,
        baseline=baselines.get(result.display),
        files=files,
        model=oracle_model,
        cache_dir=default_cache_dir() if settings.config.cache else None,
        work=work,
    )
    for note in executed.notes:
        err.print(f"[dim]referee: execution: {escape(result.display)}: {escape(note)}[/]")
    result.findings = _by_place([*result.findings, *executed.findings])
    return executed.decided, executed.support


def _read(
    result: runner.FileResult,
    source: SourceFile,
    settings: Settings,
    backend: Any,
    baselines: dict[str, str],
    decided: set[str],
    support: dict[str, str],
    work: Work,
) -> bool:
    """The reading judge on one file, its findings added to ``result``; False when the
    model could not run or its process crashed (said on stderr)."""
    from referee.checks.judge import core
    from referee.checks.judge.backend import BackendError

    try:
        judgement = core.judge_file(
            source,
            settings,
            settings.relative(Path(result.display)),
            result.findings,
            backend,
            baseline=baselines.get(result.display),
            work=work,
            decided=decided,
        )
    except BackendError as exc:  # e.g. the model process could not load the model
        err.print(
            f"[bold red]referee: the judge (L2) cannot run:[/] {escape(str(exc))}\n"
            "L0/L1 findings are reported as usual.",
            soft_wrap=True,
        )
        return False
    for note in judgement.notes:
        err.print(f"[dim]referee: judge: {escape(result.display)}: {escape(note)}[/]")
    judge_findings = [
        _with_support(f, d, support)
        for f, d in zip(judgement.findings, judgement.finding_decisions, strict=True)
    ]
    result.findings = _by_place([*result.findings, *judge_findings])
    if judgement.crashed is not None:
        # One line; the item it was judging is UNCLEAR in the report and the queue.
        unclear = sum(d.outcome == "UNCLEAR" for d in judgement.decisions[-1:])
        err.print(
            f"[bold red]referee: judge:[/] {escape(judgement.crashed)} while judging "
            f"{escape(result.display)}; {unclear} item sent to review (`referee review`), "
            "the rest not judged; L0/L1 findings are reported as usual.",
            soft_wrap=True,
        )
        return False
    return True


def _with_support(finding, decision, support: dict[str, str]):  # type: ignore[no-untyped-def]
    """A reading judge's finding with execution's supporting evidence beside it: the
    function agreed with its spec's implementations on every input tried. It is shown,
    never used to overturn the reading (only a counterexample overrides a reading)."""
    line = support.get(decision.subject)
    if line is None:
        return finding
    evidence = "\n".join(x for x in (finding.evidence, line) if x)
    return finding.model_copy(update={"evidence": evidence})


# ---------------------------------------------------------------------------- review


def _settings(directory: Path | None) -> Settings:
    try:
        return discover(directory or Path("."))
    except ConfigError as exc:
        err.print(f"[bold red]referee: error:[/] {escape(str(exc))}", soft_wrap=True)
        raise click.exceptions.Exit(EXIT_USAGE) from None


def _root(directory: Path | None) -> Path:
    return _settings(directory).root


_root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="The project whose .referee/review.jsonl to use (default: around the current directory).",
)


_all_option = click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Also list decided items and outdated ones (their code has changed since).",
)
_format_option = click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)


@click.group(invoke_without_command=True)
@_all_option
@_format_option
@_root_option
@click.pass_context
def review_group(ctx: click.Context, show_all: bool, fmt: str, root: Path | None) -> None:
    """The L3 review queue: items the judge could not settle, audits, unclear arbitrations.

    \b
    Items live in .referee/review.jsonl; a decision sticks until the content changes.
    Without a command, lists what waits (the options are `list`'s).
    Examples:
      referee review                   # what waits for a person
      referee review --root examples/demo
      referee review show 3f2a         # one item, with every perspective's evidence
      referee review accept 3f2a       # or: reject
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(review_list, show_all=show_all, fmt=fmt, root=root)
        return
    # `referee review --root DIR show ID`, `referee review --all list`: the group's options
    # reach the subcommands that take them (their own options still win).
    defaults: dict[str, dict[str, object]] = {
        name: {} for name in ("list", "show", "accept", "reject")
    }
    if root is not None:
        for options in defaults.values():
            options["root"] = root
    if show_all:
        defaults["list"]["show_all"] = True
    if fmt != "text":
        defaults["list"]["fmt"] = fmt
        defaults["show"]["fmt"] = fmt
    ctx.default_map = defaults


def _queue(root: Path) -> review.Queue:
    queue = review.read(root)
    for problem in queue.problems:
        err.print(f"[yellow]referee: review:[/] {escape(problem)}", soft_wrap=True)
    if queue.unreadable:
        # An unreadable queue is not an empty one: "nothing waits" would be a false all-clear.
        raise click.exceptions.Exit(EXIT_USAGE)
    return queue


@review_group.command("list")
@_all_option
@_format_option
@_root_option
def review_list(show_all: bool = False, fmt: str = "text", root: Path | None = None) -> None:
    """List the items waiting for review (or all of them).

    An item is about the code as it was judged; once that code changed (or its file is
    gone) the item is outdated — hidden here, kept in the file, its id still valid.
    """
    from referee.checks.judge.core import outdated

    settings = _settings(root)
    queue = _queue(settings.root)
    stale = outdated(queue.pending(), settings)
    waiting = [i for i in queue.pending() if i.id not in stale]
    items = list(queue.items.values()) if show_all else waiting

    def status(item: review.ReviewItem) -> str:
        return item.decision or ("outdated" if item.id in stale else "pending")

    if fmt == "json":
        rows = [{**i.model_dump(mode="json"), "status": status(i)} for i in items]
        click.echo(json.dumps(rows, indent=2))
        return
    hidden = (
        ""
        if show_all or not stale
        else f" {len(stale)} outdated (their code has changed since): `referee review list --all`."
    )
    if not items:
        click.echo(f"Nothing waits for review.{hidden}")
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("id", "kind", "where", "item", *(["status"] if show_all else [])):
        table.add_column(column)
    for item in items:
        table.add_row(
            item.id[:8],
            item.kind,
            f"{item.path}:{item.line}",
            escape(item.title),
            *([status(item)] if show_all else []),
        )
    Console(highlight=False, soft_wrap=True).print(table)
    click.echo(f"\n{len(waiting)} waiting. `referee review show ID` for the evidence.{hidden}")


def _find(root: Path, item_id: str) -> review.ReviewItem:
    try:
        return _queue(root).find(item_id)
    except KeyError as exc:
        err.print(f"[bold red]referee: error:[/] {escape(exc.args[0])}", soft_wrap=True)
        raise click.exceptions.Exit(EXIT_USAGE) from None


@review_group.command("show")
@click.argument("item_id", metavar="ID")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@_root_option
def review_show(item_id: str, fmt: str, root: Path | None) -> None:
    """Show one item: why it needs a person, and the quoted evidence."""
    from referee.checks.judge.core import outdated

    settings = _settings(root)
    item = _find(settings.root, item_id)
    if fmt == "json":
        click.echo(item.model_dump_json(indent=2))
        return
    out = Console(highlight=False, soft_wrap=True)
    out.print(f"[bold]{escape(item.title)}[/]  ({item.kind}, id {item.id})")
    out.print(f"{escape(item.path)}:{item.line}  {escape(item.subject)}")
    if item.reasons:
        out.print("\n[bold]Why a person decides[/]")
        for reason in item.reasons:
            out.print(f"  - {escape(reason)}")
    if item.evidence:
        heading = "Evidence" if item.kind == "arbitration" else "What each perspective said"
        out.print(f"\n[bold]{heading}[/]")
        for line in item.evidence:
            out.print(f"  - {escape(line)}")
    status = item.decision or "pending"
    if item.decision:
        status += f" by {item.decided_by} on {item.decided}"
    elif outdated([item], settings):
        status = "outdated: the code it is about has changed since it was judged"
    out.print(f"\nStatus: {status}")


def _decide(item_id: str, decision: str, by: str | None, root: Path | None) -> None:
    directory = _root(root)
    item = _find(directory, item_id)
    if item.decision is not None:
        err.print(f"[yellow]referee: {item.id[:8]} was already {item.decision}; recording again[/]")
    decided = review.decide(directory, item.id, decision, by)  # type: ignore[arg-type]
    click.echo(f"{decided.id[:8]} {decision} by {decided.decided_by}: {decided.title}")


def _decision_command(name: str, decision: str, help: str) -> click.Command:
    """``referee review accept`` / ``reject``: one item's decision, recorded."""

    @review_group.command(name, help=help)
    @click.argument("item_id", metavar="ID")
    @click.option("--by", help="Who decides (default: the current user).")
    @_root_option
    def decide(item_id: str, by: str | None, root: Path | None) -> None:
        _decide(item_id, decision, by, root)

    return decide


review_accept = _decision_command(
    "accept", "accepted", "Accept an item: the work is fine (a judge item then passes at L3)."
)
review_reject = _decision_command(
    "reject",
    "rejected",
    "Reject an item: it is reported as an error (REF403) until its content changes.",
)


__all__ = ["judge_results", "review_group"]


# ---------------------------------------------------------------------------- judge


@click.group("judge")
def judge_group() -> None:
    """The L2 judge's tools (the judge itself runs in `referee check --judge` and on save)."""


# Every subset of the perspectives is an operating point: 2^12 subsets × thresholds is
# seconds; 2^22 would be hours.
MAX_CALIBRATED_PERSPECTIVES = 12


@judge_group.command("calibrate")
@click.argument("labels", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--cost-ratio",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="What a false negative costs against a false positive (default: judge.cost-ratio).",
)
@click.option(
    "--review-cost",
    type=click.FloatRange(min=0),
    default=0.5,
    show_default=True,
    help="What one item sent to a person costs, in false positives.",
)
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True)
def judge_calibrate(labels: Path, cost_ratio: float | None, review_cost: float, top: int) -> None:
    """Pick perspectives and divergence threshold from labelled verdicts, by cost.

    LABELS is JSON lines, one labelled item each:
    {"verdicts": {"strict": "REJECT", "balanced": "PASS"}, "hallucinated": [], "label": "bad"}
    (label: good or bad). `python bench/judge.py --labels-out FILE` writes such a file from
    a real run of the judge. Prints the cheapest operating points and the configuration.
    """
    from referee.checks.judge.calibrate import operating_points

    ratio = cost_ratio if cost_ratio is not None else _configured_cost_ratio()
    items, names = _read_labels(labels)
    if len(names) > MAX_CALIBRATED_PERSPECTIVES:
        err.print(
            f"[bold red]referee: error:[/] {len(names)} perspectives; calibrate weighs every "
            f"subset of them (2^{len(names)}), at most {MAX_CALIBRATED_PERSPECTIVES} are taken"
        )
        raise click.exceptions.Exit(EXIT_USAGE)
    complete = [i for i in items if set(i.verdicts) == set(names)]
    if len(complete) != len(items):
        err.print(f"[yellow]referee: {len(items) - len(complete)} items lack a perspective[/]")
    if not complete:
        err.print("[bold red]referee: error:[/] no labelled item with every perspective")
        raise click.exceptions.Exit(EXIT_USAGE)
    points = operating_points(complete, names, cost_ratio=ratio, review_cost=review_cost)
    from rich.table import Table

    table = Table(
        title=f"{len(complete)} items, cost = {ratio:g}×FN + FP + {review_cost:g}×UNCLEAR"
    )
    for column in ("perspectives", "threshold", "FN", "FP", "UNCLEAR", "accuracy", "cost"):
        table.add_column(column, justify="left" if column == "perspectives" else "right")
    for point in points[:top]:
        accuracy = f"{point.accuracy:.1%}" if point.accuracy is not None else "—"
        table.add_row(
            ", ".join(point.perspectives),
            f"{point.threshold:g}",
            str(point.fn),
            str(point.fp),
            str(point.unclear),
            accuracy,
            f"{point.cost:g}",
        )
    out = Console(highlight=False, soft_wrap=True)
    out.print(table)
    best = points[0]
    listed = ", ".join(f'"{p}"' for p in best.perspectives)
    out.print(
        f"\n[tool.referee.judge]\nperspectives = [{listed}]\n"
        f"divergence-threshold = {best.threshold:g}\ncost-ratio = {ratio:g}",
        markup=False,
    )


def _read_labels(labels: Path) -> tuple[list[Any], dict[str, None]]:
    """The labelled items of a JSON-lines file, and the perspectives they name (in the
    order first named); a usage error names the line that is not one."""
    from referee.checks.judge.calibrate import Labelled

    items: list[Labelled] = []
    names: dict[str, None] = {}
    try:
        text = labels.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        err.print(f"[bold red]referee: error:[/] cannot read {escape(str(labels))}: {reason}")
        raise click.exceptions.Exit(EXIT_USAGE) from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            verdicts = {str(k): str(v).upper() for k, v in data["verdicts"].items()}
            truth = data["label"]
            if truth not in ("good", "bad") or not verdicts:
                raise ValueError
            if not set(verdicts.values()) <= {"PASS", "REJECT"}:
                raise ValueError
            hallucinated = data.get("hallucinated") or []
            if not isinstance(hallucinated, list) or not all(
                isinstance(h, str) for h in hallucinated
            ):
                raise ValueError
        except (ValueError, KeyError, TypeError, AttributeError):
            err.print(
                f"[bold red]referee: error:[/] {escape(str(labels))}: line {number}: expected "
                '{"verdicts": {PERSPECTIVE: "PASS"|"REJECT"}, "label": "good"|"bad", '
                '"hallucinated": [PERSPECTIVE, ...]}'
            )
            raise click.exceptions.Exit(EXIT_USAGE) from None
        names.update(dict.fromkeys(verdicts))
        items.append(Labelled(verdicts, frozenset(hallucinated), truth))
    return items, names


def _configured_cost_ratio() -> float:
    try:
        return discover(Path(".")).config.judge.cost_ratio
    except ConfigError:
        return 3.0
