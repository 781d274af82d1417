"""CUD101: hard-coded CUDA device strings."""

from __future__ import annotations

import libcst as cst

from cudalint.engine.contract import Invalid, NodeFix, PythonRule
from cudalint.engine.walk.context import PythonContext
from cudalint.engine.walk.guards import is_cuda_absence, names_a_device
from cudalint.rules.assignments import TracksAssignments
from cudalint.rules.cud1_device.device_choice import (
    in_cuda_branch_of_cpu_choice,
    inside_choice,
    selects_cuda,
)
from cudalint.rules.cud1_device.device_strings import (
    DeviceString,
    cuda_device_expr,
    device_replacement,
    is_cpu_device,
    is_device_name,
    parse_device_string,
)
from cudalint.rules.cud1_device.prose import in_prose

_STR_KEYWORDS = frozenset({"device", "map_location"})  # keyword arguments that take a device
_DICT_KEYS = frozenset({"device", "map_location"})  # kwargs dicts passed on with **


class HardcodedCudaDevice(TracksAssignments):
    """
    ## What it does
    Finds CUDA device strings: any `"cuda:<index>"` literal (`"cuda:0"`, `f"cuda:{rank}"`,
    `f"cuda:0"` and other f-strings without placeholders,
    `"cuda:%d" % rank`, `"cuda:{}".format(rank)`, `"cuda:" + str(rank)`) outside prose, and a
    bare `"cuda"` where it is used as a device: in `torch.device(...)`, `.to(...)`, a
    `device=` or `map_location=` keyword, `torch.set_default_device`, an argparse `--device`
    default, a constant, variable, attribute or parameter named like a device
    (`DEVICE = "cuda"`), a kwargs dict, or a local variable that reaches one of these
    (`loc = f"cuda:{r}"; torch.load(p, map_location=loc)`); also as a branch of a
    CUDA-or-CPU choice whose test is no CUDA check (`device = "cuda" if cpu_group is None
    else "cpu"`, `x.to("cuda" if cfg.fp16 else "cpu")`; with a CUDA check it is CUD103's).
    Strings in messages, logs, docstrings, comments, dict keys, comparisons and run names
    are not reported.

    ## Why is this bad?
    A CUDA device fails on a Mac and on a CPU-only machine:
    `AssertionError: Torch not compiled with CUDA enabled`.

    ## Example
    ```python
    DEVICE = "cuda"
    state = torch.load(path, map_location=f"cuda:{rank}")
    x = torch.zeros(3, device=torch.device("cuda", rank))
    ```

    ## Use instead
    ```python
    from cudalint.device import pick_device

    DEVICE = str(pick_device())
    state = torch.load(path, map_location=str(pick_device(rank)))
    x = torch.zeros(3, device=pick_device(rank))
    ```

    ## Fix safety
    Safe: `pick_device()` returns CUDA (with the same index) wherever CUDA is available. The
    fix keeps the expression's type: a string stays a string (`str(pick_device())`), a
    `torch.device(...)` becomes `pick_device(...)`. In the CUDA branch of a choice whose other
    way picks the CPU (`if torch.cuda.is_available(): return torch.device("cuda:0")` then
    `return torch.device("cpu")`) there is no fix: that branch never runs on a Mac, so the
    whole choice must become `pick_device()` (CUD103 rewrites the plain `if`/`else`
    assignment and the conditional expression itself).

    A device constant, a class attribute or a default argument (`def train(device="cuda")`)
    is computed when the module is imported, and that is harmless: `pick_device()` asks NVML
    whether CUDA is there (torch's `PYTORCH_NVML_BASED_CUDA_CHECK`) and initialises nothing,
    like the string it replaces, so a process forked afterwards (DataLoader workers,
    `multiprocessing`) can still use CUDA and a `CUDA_VISIBLE_DEVICES` set later in `main()`
    still applies. The default stays a string, so the signature and callers keep working.
    """

    code = "CUD101"
    name = "hardcoded-cuda-device"
    message = "Hard-coded CUDA device"
    words = frozenset({"cuda"})
    VALID = (
        'print("moving the model to cuda:0")\n',
        'logger.info("device: cuda")\n',
        'def f():\n    """Runs on cuda:0 by default."""\n',
        "# device = 'cuda'\nx = 1\n",
        'stats = {"cuda:0": 1.0}\n',
        'if device == "cuda":\n    pass\n',
        'wandb.init(name="cuda:0-baseline")\n',
        "x = y.to(x.device)\n",
        'backend = "cuda"\n',
        'raise RuntimeError("cuda:0 is busy")\n',
        "parser.add_argument('--device', help='a device such as cuda:0')\n",
        'with torch.autocast(device_type="cuda"):\n    pass\n',
        'name = f"run-cuda:{rank}"\n',
        'print(f"cuda:0 has {free} bytes free")\n',
        'logger.info(f"cuda")\n',
    )
    INVALID = (
        Invalid(
            'DEVICE = "cuda"\n',
            "from cudalint.device import pick_device\n\nDEVICE = str(pick_device())\n",
        ),
        Invalid(
            "import torch\nx = torch.zeros(3, device='cuda:0')\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "x = torch.zeros(3, device=str(pick_device(0)))\n",
        ),
        Invalid(
            "import torch\nd = torch.device('cuda', rank)\n",
            "from cudalint.device import pick_device\n\nd = pick_device(rank)\n",
        ),
        Invalid(
            "import torch as th\nd = th.device(f'cuda:{rank}')\n",
            "from cudalint.device import pick_device\n\n"
            "d = pick_device(rank)\n",
        ),
        Invalid(
            "model.to('cuda')\n",
            "from cudalint.device import pick_device\n\nmodel.to(str(pick_device()))\n",
        ),
        Invalid(
            "loc = 'cuda:%d' % args.rank\nstate = torch.load(path, map_location=loc)\n",
            "from cudalint.device import pick_device\n\n"
            "loc = str(pick_device(args.rank))\nstate = torch.load(path, map_location=loc)\n",
        ),
        Invalid(
            "loc = 'cuda'\nstate = torch.load(path, map_location=loc)\n",
            "from cudalint.device import pick_device\n\n"
            "loc = str(pick_device())\nstate = torch.load(path, map_location=loc)\n",
        ),
        Invalid(
            "torch.set_default_device('cuda')\n",
            "from cudalint.device import pick_device\n\n"
            "torch.set_default_device(str(pick_device()))\n",
        ),
        Invalid(
            "parser.add_argument('--device', default='cuda')\n",
            "from cudalint.device import pick_device\n\n"
            "parser.add_argument('--device', default=str(pick_device()))\n",
        ),
        Invalid(  # the Mac would still get the CPU: reported for a rewrite by hand
            "import torch\n\ndef dev(rank):\n    if torch.cuda.is_available():\n"
            "        return torch.device(f'cuda:{rank % 8}')\n    return torch.device('cpu')\n",
        ),
        Invalid(
            "import torch\n\nif torch.cuda.is_available():\n    print('on the GPU')\n"
            "    device = 'cuda:0'\nelse:\n    device = 'cpu'\n",
        ),
        Invalid(
            "def train(model, device='cuda'):\n    pass\n",
            "from cudalint.device import pick_device\n\n"
            "def train(model, device=str(pick_device())):\n    pass\n",
        ),
        Invalid(
            "class Config:\n    device: str = 'cuda'\n",
            "from cudalint.device import pick_device\n\n"
            "class Config:\n    device: str = str(pick_device())\n",
        ),
        Invalid(
            "kwargs = {'map_location': 'cuda'}\nstate = torch.load(path, **kwargs)\n",
            "from cudalint.device import pick_device\n\n"
            "kwargs = {'map_location': str(pick_device())}\n"
            "state = torch.load(path, **kwargs)\n",
        ),
        Invalid(
            "import torch\nx = torch.zeros(3, device=f'cuda')\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "x = torch.zeros(3, device=str(pick_device()))\n",
        ),
        Invalid(
            "model.to(f'cuda:{0}')\nbatch.to(f'cuda:1')\n",
            "from cudalint.device import pick_device\n\n"
            "model.to(str(pick_device(0)))\nbatch.to(str(pick_device(1)))\n",
            count=2,
        ),
        Invalid(
            "x = batch.to('cuda:%d' % gpu)\n",
            "from cudalint.device import pick_device\n\nx = batch.to(str(pick_device(gpu)))\n",
        ),
        Invalid(
            "x = batch.to('cuda:{}'.format(gpu))\n",
            "from cudalint.device import pick_device\n\nx = batch.to(str(pick_device(gpu)))\n",
        ),
        Invalid(
            "self.device = 'cuda:' + str(local_rank)\n",
            "from cudalint.device import pick_device\n\n"
            "self.device = str(pick_device(local_rank))\n",
        ),
        Invalid(
            "devices = ['cuda:0', 'cuda:1']\n",
            "from cudalint.device import pick_device\n\n"
            "devices = [str(pick_device(0)), str(pick_device(1))]\n",
            count=2,
        ),
    )

    def __init__(self, ctx: PythonContext) -> None:
        super().__init__(ctx)
        self.reported: set[int] = set()

    # -- candidates -------------------------------------------------------------------------
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self._candidate(node)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._candidate(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._candidate(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._candidate(node)
        self._variables_reaching(node)

    def _candidate(self, node: cst.BaseExpression) -> None:
        device = parse_device_string(node)
        if device is None or inside_choice(self.ctx) or in_prose(self.ctx):
            return
        if self._report_use(device):
            return
        if not device.bare:
            self._report(device, as_device=False)
        # A bare "cuda" in a plain variable is reported when the variable reaches a device
        # argument (_variables_reaching).

    def _report_use(self, device: DeviceString) -> bool:
        """Report `device` if it is used as a device right where it stands, or as a branch of
        a choice whose test is no CUDA check (`"cuda" if cpu_group is None else "cpu"`: a
        CUDA check makes it CUD103's, or a branch that runs only with CUDA)."""
        level = 1
        while isinstance(branch := self.ctx.parent(level), cst.IfExp) \
                and _other_way_cpu(self.ctx, branch, self.ctx.parent(level - 1)):
            level += 1
        parent, grandparent = self.ctx.parent(level), self.ctx.parent(level + 1)
        if level > 1 and isinstance(parent, cst.Arg) and isinstance(grandparent, cst.Call) \
                and parent.keyword is None and self.ctx.call_name(grandparent) == "torch.device":
            return self._report(device, as_device=False)  # torch.device("cuda" if a else "cpu")
        if isinstance(parent, cst.Arg) and isinstance(grandparent, cst.Call):
            return self._report_argument(device, parent, grandparent)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)):
            targets = parent.targets if isinstance(parent, cst.Assign) else [parent]
            if any(is_device_name(t.target) for t in targets):
                return self._report(device, as_device=False)
        if isinstance(parent, cst.Param) and is_device_name(parent.name):
            return self._report(device, as_device=False)
        if isinstance(parent, cst.DictElement) and _string_key(parent) in _DICT_KEYS:
            return self._report(device, as_device=False)
        return False

    def _report_argument(self, device: DeviceString, arg: cst.Arg, call: cst.Call) -> bool:
        name = self.ctx.call_name(call)
        keyword = arg.keyword.value if arg.keyword is not None else None
        if name == "torch.device" and keyword is None:
            whole = cuda_device_expr(self.ctx, call)
            if whole is not None:
                return self._report(device, as_device=True, target=call, index=whole.index)
        if keyword in _STR_KEYWORDS or (keyword is None and _is_device_sink(name, call, arg)):
            return self._report(device, as_device=False)
        if keyword == "default" and _is_device_option(call):
            return self._report(device, as_device=False)
        return False

    def _variables_reaching(self, call: cst.Call) -> None:
        """`loc = "cuda"` ... `torch.load(p, map_location=loc)`: report the literal."""
        name = self.ctx.call_name(call)
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            sink = keyword in _STR_KEYWORDS or (keyword is None and (
                _is_device_sink(name, call, arg) or name == "torch.device"))
            if not sink or not isinstance(arg.value, cst.Name):
                continue
            value, binding = self.resolve(arg.value)
            if binding is None:
                continue
            for device in _branch_devices(self.ctx, value):
                self._report(device, as_device=False)

    # -- reporting --------------------------------------------------------------------------
    def _report(
        self,
        device: DeviceString,
        *,
        as_device: bool,
        target: cst.BaseExpression | None = None,
        index: cst.BaseExpression | None = None,
    ) -> bool:
        if id(device.node) in self.reported:
            return True
        self.reported.add(id(device.node))
        target = target or device.node
        index = index if target is not device.node else device.index
        shown = self.ctx.module.code_for_node(device.node)
        fix = None
        message = f"Hard-coded CUDA device {shown}"
        if in_cuda_branch_of_cpu_choice(self.ctx):
            # the branch runs only with CUDA: a fix here would change nothing off CUDA
            message += (" in the CUDA branch of a CUDA-or-CPU choice: rewrite the whole "
                        "choice as `pick_device()` so that a Mac gets MPS")
        elif self.ctx.helper_available("pick_device"):
            replacement = device_replacement(self.ctx, index, as_device=as_device)
            fix = NodeFix(target, replacement, f"Replace with `{_code(self, replacement)}`",
                          helpers=("pick_device",))
        self.report(device.node, message, fix=fix)
        return True



def _tests_cuda(ctx: PythonContext, test: cst.BaseExpression) -> bool:
    """A choice's test that checks for CUDA (or is a user's CUDA switch) one way or the
    other: the choice is CUD103's, or its CUDA branch runs only with CUDA."""
    return selects_cuda(ctx, test) or is_cuda_absence(ctx, test)


def _other_way_cpu(ctx: PythonContext, choice: cst.IfExp, branch: cst.CSTNode | None) -> bool:
    """`branch` is one way of a CUDA-or-CPU choice whose test is no CUDA check: the other
    way is the CPU (`"cuda" if cpu_group is None else "cpu"`; not `"cuda" if not name else
    name`, a default)."""
    if branch is choice.body:
        other = choice.orelse
    elif branch is choice.orelse:
        other = choice.body
    else:
        return False
    return is_cpu_device(ctx, other) and not _tests_cuda(ctx, choice.test)


def _branch_devices(ctx: PythonContext, value: cst.BaseExpression) -> list[DeviceString]:
    """The CUDA device string `value` is, or the one a CUDA-or-CPU choice whose test is no
    CUDA check gives (`"cuda" if cpu_group is None else "cpu"`)."""
    device = parse_device_string(value)
    if device is not None:
        return [device]
    if not isinstance(value, cst.IfExp):
        return []
    return [found for branch in (value.body, value.orelse)
            if _other_way_cpu(ctx, value, branch)
            for found in _branch_devices(ctx, branch)]


def _is_device_sink(name: str | None, call: cst.Call, arg: cst.Arg) -> bool:
    """A positional argument that is a device: `.to(<device>)`, `set_default_device(<d>)`,
    `torch.load(f, <map_location>)`."""
    position = [a for a in call.args if a.keyword is None].index(arg)
    if name == "torch.set_default_device":
        return position == 0
    if name == "torch.load":
        return position == 1
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value == "to" and position == 0


def _is_device_option(call: cst.Call) -> bool:
    """`parser.add_argument("--device", default=...)`."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "add_argument":
        return False
    flags = [a.value for a in call.args if a.keyword is None]
    return any(
        isinstance(f, cst.SimpleString) and isinstance(f.evaluated_value, str)
        and names_a_device(f.evaluated_value.lstrip("-").replace("-", "_"))
        for f in flags
    )


def _string_key(element: cst.DictElement) -> str | None:
    key = element.key
    if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
        return key.evaluated_value
    return None


def _code(rule: PythonRule, node: cst.CSTNode) -> str:
    return rule.ctx.module.code_for_node(node)

