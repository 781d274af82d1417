"""A CI file's steps with the variables each starts with: GitHub workflow steps (and a
composite action's `runs.steps`) with their `env:` values, the step's over the job's over the
workflow's; GitLab jobs with their `variables:`, the job's over the global ones (those the
job's `inherit: variables:` keeps).

Read once per file, for the scripts of formats/scripts.py (the rules that follow shell
variables) and for CUD404, which reports a CUDA index or image held by a variable where it is
set, if some step sees it there.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from yaml.nodes import MappingNode, Node, ScalarNode

from cudalint.formats import yaml_lines

# Top-level keys of a .gitlab-ci.yml that are no job.
_GITLAB_RESERVED = frozenset({"stages", "variables", "default", "include", "workflow",
                              "image", "services", "before_script", "after_script", "cache"})
_GITLAB_SCRIPTS = ("before_script", "script", "after_script")


@dataclass(frozen=True)
class Variable:
    value: str
    node: Node  # where the value is written


@dataclass(frozen=True)
class Step:
    """A GitHub step, or a GitLab job: what the CI runs with one set of variables."""

    variables: Mapping[str, Variable]  # the nearest level's value of each name
    scripts: tuple[Node, ...]  # its `run:` block; a GitLab job's script lines, one each

    def values(self) -> dict[str, str]:
        return {name: variable.value for name, variable in self.variables.items()}


@lru_cache(maxsize=16)
def steps_of(text: str) -> tuple[Step, ...]:
    """The steps of a CI file, in order; an unreadable file has none (CUD404 reports it)."""
    parsed = yaml_lines.documents(text)
    if not isinstance(parsed, tuple):
        return ()
    return tuple(step for document in parsed for step in _steps(document))


def gitlab_jobs(document: Node) -> Iterator[Node]:
    """A .gitlab-ci.yml's jobs: every top-level key but the global keywords and hidden
    (`.template`) keys."""
    for key, job in yaml_lines.items(document):
        if yaml_lines.scalar(key) not in _GITLAB_RESERVED and not str(key.value).startswith("."):
            yield job


def _steps(document: Node) -> Iterator[Step]:
    get, entries = yaml_lines.get, yaml_lines.entries
    jobs, runs = get(document, "jobs"), get(document, "runs")
    if jobs is None and runs is None:  # GitLab: every other top-level key is a job
        everywhere = _variables(document, "variables")
        for job in gitlab_jobs(document):
            inherited = _inherited(everywhere, get(get(job, "inherit"), "variables"))
            scripts = tuple(line for key in _GITLAB_SCRIPTS for line in entries(get(job, key)))
            yield Step({**inherited, **_variables(job, "variables")}, scripts)
        return
    workflow = _variables(document, "env")
    for _, job in yaml_lines.items(jobs):
        around = {**workflow, **_variables(job, "env")}
        yield from (_step(step, around) for step in entries(get(job, "steps")))
    yield from (_step(step, {}) for step in entries(get(runs, "steps")))  # a composite action


def _step(step: Node, around: Mapping[str, Variable]) -> Step:
    run = yaml_lines.get(step, "run")
    return Step({**around, **_variables(step, "env")}, () if run is None else (run,))


def _variables(holder: Node | None, key: str) -> dict[str, Variable]:
    """The variables a mapping sets under `key`: `NAME: value`, or GitLab's
    `NAME: {value: ..., description: ...}`."""
    found = {}
    for name, node in yaml_lines.items(yaml_lines.get(holder, key)):
        value = yaml_lines.get(node, "value") if isinstance(node, MappingNode) else node
        if isinstance(name, ScalarNode) and isinstance(value, ScalarNode):
            found[name.value] = Variable(value.value, value)
    return found


def _inherited(variables: dict[str, Variable], inherit: Node | None) -> dict[str, Variable]:
    """The global variables a GitLab job keeps: all, none (`inherit: {variables: false}`) or
    those it lists."""
    if inherit is None:
        return variables
    if isinstance(inherit, ScalarNode):
        return variables if inherit.value.lower() != "false" else {}
    kept = {yaml_lines.scalar(name) for name in yaml_lines.entries(inherit)}
    return {name: variable for name, variable in variables.items() if name in kept}
