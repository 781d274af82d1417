"""CUD701: NCCL process groups, which need NVIDIA GPUs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cudalint.engine.contract import Invalid, NodeFix
from cudalint.engine.walk import guards
from cudalint.finding import Applicability
from cudalint.rules import args as call_args
from cudalint.rules.assignments import TracksAssignments

# `get_default_backend_for_device` came in torch 2.6, but it only knows MPS (-> gloo) since
# 2.8 (pytorch#149538); on 2.6/2.7 it raises ValueError for an MPS device.
DEFAULT_BACKEND_SINCE = (2, 8)
# Functions taking a backend, with the position of their `backend` parameter.
_PROCESS_GROUPS = {
    "torch.distributed.init_process_group": 0,
    "torch.distributed.distributed_c10d.init_process_group": 0,
    "torch.distributed.new_group": 2,
    "torch.distributed.distributed_c10d.new_group": 2,
}
# Keywords that choose a process-group backend, in torch and in launchers built on it.
_BACKEND_KEYWORDS = frozenset({"backend", "dist_backend", "process_group_backend", "ddp_backend"})
_NCCL_ATTRIBUTES = frozenset(
    {"torch.distributed.Backend.NCCL", "torch.distributed.distributed_c10d.Backend.NCCL"}
)
_DEFAULT_LOOKUPS = frozenset({"os.environ.get", "os.getenv", "os.environ.setdefault"})
_MAX_DEPTH = 6
_MESSAGE = (
    'NCCL needs NVIDIA GPUs: `init_process_group("nccl")` raises on a Mac or a CPU-only '
    "machine (`Distributed package doesn't have NCCL built in`)"
)

# Chosen only where CUDA is available: the line picks another backend on a Mac.
_GUARDED_MESSAGE = (
    "NCCL is chosen here only where CUDA (or NCCL) is available; "
    "`torch.distributed.get_default_backend_for_device(...)` makes the same choice for "
    "every device"
)


@dataclass(frozen=True)
class _Literal:
    node: cst.CSTNode  # `"nccl"` or `dist.Backend.NCCL`
    guarded: bool
    plain: bool  # the whole backend ("nccl"), not one entry of "cpu:gloo,cuda:nccl"


class NcclBackend(TracksAssignments):
    """
    ## What it does
    Finds NCCL chosen as the `torch.distributed` backend: `init_process_group("nccl")`,
    `backend="nccl"`, `dist.Backend.NCCL`, also when "nccl" reaches the call through a
    variable, a kwargs dict (`cfg = {"backend": "nccl"}` then `init_process_group(**cfg)`), an
    `os.environ.get(..., "nccl")` default, an argparse default
    (`add_argument("--backend", default="nccl")`) or a variable named like a backend. Reported
    at the keyword when "nccl" is a keyword argument's whole value (`backend="nccl"`), else
    where the literal is (a variable's value, a dict entry, a branch of a conditional).
    `"nccl"` in messages, dict keys and comparisons (`if backend == "nccl":`, a feature gate)
    is not reported; `"gloo"` never is.

    ## Why is this bad?
    NCCL exists only for NVIDIA GPUs. On a Mac or a CPU-only machine
    `init_process_group("nccl")` raises `RuntimeError: Distributed package doesn't have NCCL
    built in`. gloo runs there, and `torch.distributed.get_default_backend_for_device` picks
    NCCL on CUDA and gloo on MPS and CPU.

    ## Example
    ```python
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    ```

    ## Use instead
    ```python
    from cudalint.device import pick_device

    dist.init_process_group(dist.get_default_backend_for_device(pick_device()),
                            rank=rank, world_size=world_size)
    ```

    ## Fix safety
    Unsafe, and only offered when `target-torch` is 2.8 or later (earlier versions have no
    default backend for MPS): `pick_device()` can be overridden with `CUDALINT_DEVICE`, and
    where it picks CUDA the backend stays "nccl". A mixed "cpu:gloo,cuda:nccl" string and a
    literal already under a CUDA check are not rewritten, nor is the branch of a conditional
    that only runs with CUDA (`"gloo" if not torch.cuda.is_available() else "nccl"`) or with
    NCCL (`"nccl" if dist.is_nccl_available() else "gloo"`: NCCL is built only into CUDA
    builds of torch): that line picks gloo on a Mac, and its finding is guarded.
    """

    code = "CUD701"
    name = "nccl-backend"
    message = _MESSAGE
    keywords = ("nccl", "NCCL")
    VALID = (
        "import torch.distributed as dist\ndist.init_process_group('gloo')\n",
        "import torch.distributed as dist\ndist.init_process_group(backend=args.backend)\n",
        "import torch.distributed as dist\nif backend == 'nccl':\n    pass\n",
        "import torch.distributed as dist\nprint('using nccl')\n",
        "import torch.distributed as dist\nlogger.info('backend=%s', 'nccl')\n",
        "timeouts = {'nccl': 600, 'gloo': 60}\n",
        "import torch.distributed as dist\nok = dist.get_backend() == 'nccl'\n",
        "import torch.distributed as dist\nok = dist.is_nccl_available()\n",
        "parser.add_argument('--backend', choices=['nccl', 'gloo'], default='gloo')\n",
        "import torch.distributed as dist\nbackend = 'gloo'\ndist.init_process_group(backend)\n",
        "import torch.distributed as dist\n"
        "opts = {'backend': 'gloo', 'timeout': {'nccl': 600}}\ndist.init_process_group(**opts)\n",
        "import torch.distributed as dist\n"
        "if dist.is_nccl_available():\n    print('NCCL', torch.cuda.nccl.version())\n",
    )
    INVALID = (
        Invalid(
            "import torch.distributed as dist\ndist.init_process_group('nccl')\n",
            "import torch.distributed as dist\nfrom cudalint.device import pick_device\n\n"
            "dist.init_process_group(dist.get_default_backend_for_device(pick_device()))\n",
            unsafe=True,
            guarded=False,
        ),
        Invalid(
            "import torch\ntorch.distributed.init_process_group(backend='nccl', rank=r)\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "torch.distributed.init_process_group(backend="
            "torch.distributed.get_default_backend_for_device(pick_device()), rank=r)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch.distributed as dist\n"
            "def setup():\n    backend = 'nccl'\n    dist.init_process_group(backend)\n",
            "import torch.distributed as dist\nfrom cudalint.device import pick_device\n\n"
            "def setup():\n    backend = dist.get_default_backend_for_device(pick_device())\n"
            "    dist.init_process_group(backend)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch.distributed as dist\n\ndef setup(rank, world):\n"
            "    cfg = {'backend': 'nccl', 'rank': rank, 'world_size': world}\n"
            "    dist.init_process_group(**cfg)\n",
            "import torch.distributed as dist\nfrom cudalint.device import pick_device\n\n"
            "def setup(rank, world):\n"
            "    cfg = {'backend': dist.get_default_backend_for_device(pick_device()), "
            "'rank': rank, 'world_size': world}\n"
            "    dist.init_process_group(**cfg)\n",
            unsafe=True,
        ),
        Invalid(
            "parser.add_argument('--dist-backend', default='nccl', type=str)\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "parser.add_argument('--dist-backend', default="
            "torch.distributed.get_default_backend_for_device(pick_device()), type=str)\n",
            unsafe=True,
        ),
        Invalid(
            "import os\nimport torch.distributed as dist\n"
            "dist.init_process_group(os.environ.get('BACKEND', 'NCCL'))\n",
            "import os\nimport torch.distributed as dist\n"
            "from cudalint.device import pick_device\n\n"
            "dist.init_process_group(os.environ.get('BACKEND', "
            "dist.get_default_backend_for_device(pick_device())))\n",
            unsafe=True,
        ),
        Invalid(
            "from torch import distributed as dist\ndist.init_process_group(dist.Backend.NCCL)\n",
            "from torch import distributed as dist\nfrom cudalint.device import pick_device\n\n"
            "dist.init_process_group(dist.get_default_backend_for_device(pick_device()))\n",
            unsafe=True,
        ),
        Invalid(
            "import torch.distributed as dist\ndist.init_process_group('cpu:gloo,cuda:nccl')\n"
        ),
        Invalid(
            "class Config:\n    dist_backend: str = 'nccl'\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "class Config:\n    dist_backend: str = "
            "torch.distributed.get_default_backend_for_device(pick_device())\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nimport torch.distributed as dist\n"
            "backend = 'nccl' if torch.cuda.is_available() else 'gloo'\n"
            "dist.init_process_group(backend)\n",
        ),
        Invalid(
            "import torch\nimport torch.distributed as dist\n"
            "dist.init_process_group('gloo' if not torch.cuda.is_available() else 'nccl')\n",
        ),
        Invalid(
            "import torch.distributed as dist\n\ndef init(rank, world):\n"
            "    backend = 'nccl' if dist.is_nccl_available() else 'gloo'\n"
            "    dist.init_process_group(backend, rank=rank, world_size=world)\n",
            guarded=True,
        ),
        Invalid(
            "import torch\n"
            "torch.distributed.init_process_group(\n"
            "    'nccl' if torch.distributed.is_nccl_available() else 'gloo')\n",
            guarded=True,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        for where, value, guarded in self._backend_values(node):
            self._report_literals(value, where, guarded=guarded)

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(_names_backend(t.target) for t in node.targets):
            self._report_literals(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and _names_backend(node.target):
            self._report_literals(node.value)

    def _report_literals(self, value: cst.BaseExpression, where: cst.CSTNode | None = None,
                         *, guarded: bool = False) -> None:
        """Report each "nccl" that `value` evaluates to: at `where` (a keyword argument) when
        it is the whole value, else where the literal is (a variable's value, a branch).
        `guarded`: `value` was assigned under a CUDA check."""
        for literal in self._literals(value, 0, guarded=guarded):
            guarded = literal.guarded or self.ctx.is_guarded()
            message = _GUARDED_MESSAGE if guarded else self._message()
            at = where if where is not None and literal.node is value else literal.node
            self.report(at, message, fix=self._fix(literal), guarded=guarded)

    def _backend_values(self, call: cst.Call
                        ) -> Iterator[tuple[cst.Arg | None, cst.BaseExpression, bool]]:
        """The values `call` takes as a backend, each with its keyword argument (None for a
        positional one, or an entry of a kwargs dict) and whether it was assigned under a
        CUDA check (a kwargs dict's)."""
        name = self.ctx.call_name(call) or ""
        if name.endswith("add_argument") or name == "click.option":
            default = call_args.keyword(call.args, "default")
            if default is not None:
                yield default, default.value, False
            return
        position = _PROCESS_GROUPS.get(name)
        if position is not None and (arg := call_args.positional(call.args, position)):
            yield None, arg.value, False
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in _BACKEND_KEYWORDS:
                yield arg, arg.value, False
            elif arg.star == "**":
                # a `dict(backend=...)` keyword is reported where that call is visited
                yield from ((None, value, guarded) for where, _, value, guarded
                            in self.kwargs_entries(arg.value, _BACKEND_KEYWORDS)
                            if not isinstance(where, cst.Arg))

    def _literals(self, expr: cst.BaseExpression, depth: int, *, guarded: bool
                  ) -> Iterator[_Literal]:
        """The "nccl" literals that `expr` evaluates to: itself, a branch of a conditional,
        an environment lookup's default, or a variable's value."""
        if depth > _MAX_DEPTH:
            return
        if isinstance(expr, cst.Name):
            binding = self.binding(expr)
            if binding is not None:
                yield from self._literals(binding.value, depth + 1,
                                          guarded=guarded or binding.guarded)
            return
        if isinstance(expr, cst.SimpleString):
            yield from _from_string(expr, guarded)
        elif self.ctx.qualname(expr) in _NCCL_ATTRIBUTES:
            yield _Literal(expr, guarded, plain=True)
        elif isinstance(expr, cst.IfExp):
            body_guarded = guarded or guards.branch_guard(self.ctx, expr, "body")
            else_guarded = guarded or guards.branch_guard(self.ctx, expr, "orelse")
            yield from self._literals(expr.body, depth + 1, guarded=body_guarded)
            yield from self._literals(expr.orelse, depth + 1, guarded=else_guarded)
        elif isinstance(expr, cst.BooleanOperation):
            yield from self._literals(expr.left, depth + 1, guarded=guarded)
            yield from self._literals(expr.right, depth + 1, guarded=guarded)
        elif isinstance(expr, cst.Call) and self.ctx.call_name(expr) in _DEFAULT_LOOKUPS:
            default = call_args.positional(expr.args, 1) or call_args.keyword(expr.args, "default")
            if default is not None:
                yield from self._literals(default.value, depth + 1, guarded=guarded)

    def _message(self) -> str:
        if self.ctx.settings.target_torch >= DEFAULT_BACKEND_SINCE:
            return (f"{_MESSAGE}; use `torch.distributed.get_default_backend_for_device(...)`, "
                    "gloo on MPS and CPU")
        return f'{_MESSAGE}; use "gloo" off CUDA'

    def _fix(self, literal: _Literal) -> NodeFix | None:
        if literal.guarded or not literal.plain or self.ctx.is_guarded():
            return None
        if self.ctx.settings.target_torch < DEFAULT_BACKEND_SINCE:
            return None
        if not self.ctx.helper_available("pick_device"):
            return None
        dist = self.ctx.local_name("torch.distributed")
        if dist is not None:
            func: cst.BaseExpression = cst.parse_expression(
                f"{dist}.get_default_backend_for_device")
            imports: tuple[str, ...] = ()
        else:
            func, imports = self.ctx.torch_attr("distributed.get_default_backend_for_device")
        device = self.ctx.helper_call("pick_device")
        return NodeFix(
            literal.node,
            cst.Call(func=func, args=[cst.Arg(device)]),
            "Choose the backend for the device with `get_default_backend_for_device`",
            applicability=Applicability.UNSAFE,
            helpers=("pick_device",),
            imports=imports,
        )


def _from_string(node: cst.SimpleString, guarded: bool) -> Iterator[_Literal]:
    value = node.evaluated_value
    if not isinstance(value, str):
        return
    lowered = value.strip().lower()
    if lowered == "nccl":
        yield _Literal(node, guarded, plain=True)
    elif any(part.split(":")[-1].strip() == "nccl" for part in lowered.split(",")):
        yield _Literal(node, guarded, plain=False)  # "cpu:gloo,cuda:nccl"


def _names_backend(target: cst.BaseExpression) -> bool:
    """`backend`, `DIST_BACKEND`, `self.backend`: a name that holds a distributed backend."""
    if isinstance(target, cst.Attribute):
        target = target.attr
    return isinstance(target, cst.Name) and "backend" in target.value.lower()
