"""What a Python rule hands the engine: a node to report, and maybe a fix replacing a node.
The engine positions, suppresses and fixes them; rule modules re-export both from
engine.contract."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from cudalint.finding import Applicability, Severity


@dataclass(frozen=True)
class NodeFix:
    """Replace `target` (a node of the parsed module) with `replacement`.

    `helpers` are names the replacement uses from the configured helper module
    (`pick_device`, `synchronize`, ...); `imports` are plain `import X` modules it needs.
    """

    target: cst.CSTNode
    replacement: cst.CSTNode
    message: str
    applicability: Applicability = Applicability.SAFE
    helpers: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()


@dataclass
class Report:
    """What a Python rule says about a node, before the engine positions it."""

    code: str
    node: cst.CSTNode
    message: str
    severity: Severity
    guarded: bool
    fix: NodeFix | None = None
    extra: dict[str, str] = field(default_factory=dict)
