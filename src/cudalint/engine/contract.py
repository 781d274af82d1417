"""The rule classes. A rule reports; the engine positions, filters, and fixes.

A rule class is its own spec: its docstring (What it does / Why is this bad? / Example /
Use instead / Fix safety) becomes its documentation page, and its VALID and INVALID examples
are run by a generated test (tests/rules/test_examples.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar, Protocol

import libcst as cst

from cudalint.engine.first_pass.prefilter import Terms
from cudalint.engine.report import NodeFix, Report
from cudalint.finding import Applicability, Finding, Position, Severity, rule_url

if TYPE_CHECKING:
    from cudalint.config import Selection
    from cudalint.engine.walk.context import PythonContext, Settings
    from cudalint.kinds import FileKind, SourceFile


@dataclass(frozen=True)
class Valid:
    """Code that must not be reported. `path` picks the file kind (a requirements file, ...)."""

    code: str
    path: str = "example.py"


@dataclass(frozen=True)
class Invalid:
    """Code that must be reported at least once by the rule.

    `fixed` is what `--fix` makes of it (with `--unsafe-fixes` when `unsafe`); None: no fix.
    `count` is how many findings of the rule the code yields. `guarded`, where given, is
    whether every one of them is guarded (reported one severity lower: under a CUDA check, in
    a test marked for CUDA, ...): the examples of what is and is not a guard.
    """

    code: str
    fixed: str | None = None
    unsafe: bool = False
    path: str = "example.py"
    count: int = 1
    guarded: bool | None = None


class Rule:
    """Metadata shared by every rule. Subclasses set the class variables."""

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, as in ruff: "hardcoded-cuda-device"
    message: ClassVar[str]  # the default message
    severity: ClassVar[Severity] = Severity.ERROR  # the usual one; shown first in the docs
    # The other severities an unguarded finding may have when it depends on the site (the call,
    # the package, the variable); tests/rules/test_examples.py holds the examples to them.
    site_severities: ClassVar[tuple[Severity, ...]] = ()
    # What a file must contain for the rule to have anything to find: one of the substrings
    # `keywords` or the whole identifiers `words` (`cuda` is a word: `x.cuda()`, `"cuda:0"`,
    # `torch.cuda`, but not `is_cuda`). Used to skip parsing what no enabled rule could report on.
    keywords: ClassVar[tuple[str, ...]] = ()
    words: ClassVar[frozenset[str]] = frozenset()
    VALID: ClassVar[tuple[Valid | str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()
    # A code may be read from several file kinds by several classes (CUD501: a FileRule for
    # scripts, a PythonRule for `subprocess`); the others set False, and the primary one's
    # docstring documents the code.
    primary: ClassVar[bool] = True
    # True where prefilter() reads the settings (the target torch, the project's extensions):
    # the rule index then records no terms for it, and a run always imports it.
    settings_terms: ClassVar[bool] = False
    # Whether the rule follows a name assigned at top level into the functions that use it
    # (cudalint.rules.assignments.TracksAssignments; `DEVICE = "cuda"`, then `x.to(DEVICE)`).
    # A rule that sets False follows names only through imports (`ctx.qualname`): the first
    # pass then reads no function for naming what a top-level assignment binds on its terms.
    follows_assignments: ClassVar[bool] = True

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """What a file, or a function, must name for the rule to find anything there
        (cudalint.engine.first_pass.prefilter): `keywords` and `words` by default. Rules override
        this to be precise (names that only count where called) or when the names depend on the
        project or the target torch."""
        return Terms(cls.keywords, cls.words)

    @classmethod
    def severities(cls) -> tuple[Severity, ...]:
        """Every severity an unguarded finding of the rule can have, the usual one first."""
        others = sorted(set(cls.site_severities) - {cls.severity}, reverse=True)
        return (cls.severity, *others)

    @classmethod
    def fix_applicability(cls) -> Applicability | None:
        """Whether the rule can fix, derived from its examples as in Fixit."""
        fixed = [ex for ex in cls.INVALID if ex.fixed is not None]
        if not fixed:
            return None
        if all(ex.unsafe for ex in fixed):
            return Applicability.UNSAFE
        return Applicability.SAFE

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def url(cls) -> str:
        return rule_url(cls.code)


class PythonRule(Rule):
    """A rule over a Python module. Define `visit_<Node>` / `leave_<Node>` methods, as on a
    libcst visitor; the engine calls every enabled rule from one traversal of the tree.
    `self.ctx` resolves import aliases, knows the enclosing guards and scope, and builds
    helper calls for fixes.
    """

    def __init__(self, ctx: PythonContext) -> None:
        self.ctx = ctx

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        fix: NodeFix | None = None,
        severity: Severity | None = None,
        guarded: bool | None = None,
        **extra: str,
    ) -> None:
        if fix is not None and self.ctx.in_cuda_only_branch():
            fix = None  # the line already picks something else off CUDA
        elif fix is not None and fix.applicability is Applicability.SAFE \
                and self.ctx.in_cuda_test():
            # A test that exists to check CUDA: a rewrite may stop it testing CUDA.
            fix = replace(fix, applicability=Applicability.UNSAFE)
        self.ctx.reports.append(
            Report(
                code=self.code,
                node=node,
                message=message or self.message,
                severity=severity or self.severity,
                guarded=self.ctx.is_guarded() if guarded is None else guarded,
                fix=fix,
                extra=dict(extra),
            )
        )


class FileRule(Rule):
    """A rule over a non-Python file (requirements, environment.yml, Dockerfile, ...).

    `file_kinds` names the kinds (cudalint.kinds.FileKind values) the rule reads.
    """

    file_kinds: ClassVar[frozenset[str]] = frozenset()

    def check(self, source: SourceFile) -> Iterable[Finding]:
        raise NotImplementedError

    def finding(
        self,
        source: SourceFile,
        row: int,
        column: int = 1,
        end_row: int | None = None,
        end_column: int | None = None,
        message: str | None = None,
        *,
        severity: Severity | None = None,
        guarded: bool = False,
    ) -> Finding:
        """A finding at 1-based `row`/`column`; the end defaults to the end of the row."""
        if end_row is None:
            end_row = row
        if end_column is None:
            end_column = len(source.line(end_row)) + 1
        finding = Finding(
            code=self.code,
            message=message or self.message,
            path=source.path,
            location=Position(row, column),
            end_location=Position(end_row, end_column),
            severity=severity or self.severity,
        )
        return finding.with_guard() if guarded else finding


def iter_examples(rule: type[Rule]) -> Iterator[Valid | Invalid]:
    for example in rule.VALID:
        yield Valid(example) if isinstance(example, str) else example
    yield from rule.INVALID


class Catalogue(Protocol):
    """What a run asks of the rule registry, which the layer above hands it (the module
    cudalint.rules): the rules that read some file kinds, importing only theirs, and those a
    selection picks. The engine itself never imports a rule."""

    def for_kinds(self, kinds: Iterable[FileKind], texts: Sequence[bytes] | None = None,
                  /) -> tuple[type[Rule], ...]: ...

    def select(self, sources: Iterable[Selection], rules: Iterable[type[Rule]] | None = None,
               /) -> tuple[type[Rule], ...]: ...
