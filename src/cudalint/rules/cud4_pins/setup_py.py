"""CUD402 (setup.py): `install_requires`, `setup_requires` and `extras_require` of a
`setup(...)` call, read from the syntax tree; setup.py is never run."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cudalint.engine.contract import Invalid, PythonRule

_SETUP = frozenset({"setuptools.setup", "distutils.core.setup", "skbuild.setup", "setup"})
_REQUIRED = frozenset({"install_requires", "setup_requires"})


class SetupPyCudaPin(PythonRule):
    """
    ## What it does
    Finds CUDA pins in a setup.py's `setup(install_requires=[...], extras_require={...})`:
    the same pins CUD402 finds in requirements files (see its page), in list literals, in
    module-level names bound to them, and in `+`-joined lists. A pin under an extra is
    guarded.

    ## Why is this bad?
    `pip install .` on a Mac fails to resolve a CUDA wheel such as `cupy-cuda12x`.

    ## Example
    ```python
    setup(name="fastattn", install_requires=["torch>=2.1", "flash-attn>=2.5"])
    ```

    ## Use instead
    ```python
    setup(
        name="fastattn",
        install_requires=["torch>=2.1"],
        extras_require={"cuda": ["flash-attn>=2.5; sys_platform == 'linux'"]},
    )
    ```
    """

    code = "CUD402"
    name = "pip-cuda-pin"
    primary = False  # documented by the requirements-file rule
    message = "pip pin that needs CUDA"
    keywords = ("install_requires", "extras_require", "setup_requires")
    VALID = (
        "from setuptools import setup\nsetup(name='x', install_requires=['torch>=2.1'])\n",
        "from setuptools import setup\nREQS = ['numpy']\nsetup(install_requires=REQS)\n",
        "install_requires = ['cupy-cuda12x']  # not passed to setup()\n",
    )
    INVALID = (
        Invalid("from setuptools import setup\n"
                "setup(name='x', install_requires=['torch==2.1.0+cu121', 'cupy-cuda12x'])\n",
                count=2),
        Invalid("import setuptools\nGPU = ['flash-attn>=2.5']\n"
                "setuptools.setup(extras_require={'gpu': GPU, 'dev': ['pytest']})\n"),
        Invalid("from setuptools import setup\nBASE = ['numpy']\n"
                "setup(install_requires=BASE + ['xformers'])\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.call_name(node) not in _SETUP:
            return
        for arg in node.args:
            if arg.keyword is None:
                continue
            if arg.keyword.value in _REQUIRED:
                self._check(self._strings(arg.value), guarded=False)
            elif arg.keyword.value == "extras_require":
                value = self._resolved(arg.value)
                if isinstance(value, cst.Dict):
                    for element in value.elements:
                        self._check(self._strings(element.value), guarded=True)

    def _check(self, strings: Iterator[cst.SimpleString], *, guarded: bool) -> None:
        # the requirement parsers: only once a setup() call names its requirements
        from cudalint.rules.cud4_pins.cuda_pins import requirement_problem

        for string in strings:
            value = string.evaluated_value
            problem = requirement_problem(value) if isinstance(value, str) else None
            if problem is not None:
                self.report(string, problem.message, severity=problem.severity,
                            guarded=guarded or problem.guarded or self.ctx.is_guarded())

    def _strings(self, expr: cst.BaseExpression) -> Iterator[cst.SimpleString]:
        expr = self._resolved(expr)
        if isinstance(expr, (cst.List, cst.Tuple)):
            for element in expr.elements:
                if isinstance(element.value, cst.SimpleString):
                    yield element.value
        elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            yield from self._strings(expr.left)
            yield from self._strings(expr.right)

    def _resolved(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """A name bound once at module level to a literal: that literal."""
        if not isinstance(expr, cst.Name):
            return expr
        for statement in self.ctx.module.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Assign) and any(
                    isinstance(t.target, cst.Name) and t.target.value == expr.value
                    for t in small.targets
                ):
                    return small.value
        return expr
