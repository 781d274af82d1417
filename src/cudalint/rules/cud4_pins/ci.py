"""CUD404: CI workflows that only test on CUDA: GPU runners, CUDA container images, CUDA
toolkit set-up actions, and CUDA pins installed by their steps."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from yaml.nodes import Node

from cudalint.engine.contract import FileRule, Invalid, Valid
from cudalint.finding import Finding, Severity
from cudalint.formats import ci, scripts, yaml_lines
from cudalint.formats.shell import Command
from cudalint.kinds import FileKind, SourceFile
from cudalint.rules.cud4_pins.conda import conda_command
from cudalint.rules.cud4_pins.cuda_pins import Problem, cuda_image, finding, is_cuda_url
from cudalint.rules.cud4_pins.pip import pip_commands

_GPU_LABEL = re.compile(
    r"(?<![a-z0-9])(?:gpu\w*|cuda\w*|nvidia\w*|a10g?|a100|h100|h200|v100|t4|l4|l40s?)(?![a-z0-9])",
    re.IGNORECASE,
)
_MATRIX = re.compile(r"matrix\.([\w-]+)")
_ADVICE = "nothing tests the code off CUDA; add a `macos-14` (Apple Silicon) job"


class CudaOnlyCi(FileRule):
    """
    ## What it does
    Finds CI jobs tied to CUDA in GitHub Actions workflows (`.github/workflows/*.yml`, also
    reusable ones), composite actions (`.github/actions/*/action.yml`, their `runs.steps`)
    and `.gitlab-ci.yml`:
    - GPU runners: `runs-on:` labels naming `gpu`, `cuda`, `nvidia` or a GPU model (also
      through `${{ matrix.runner }}`), GitLab `tags: [gpu]`;
    - CUDA container images (`container:`, `services:`, GitLab `image:`);
    - CUDA toolkit set-up actions (`Jimver/cuda-toolkit`, `N-Storm/cuda-toolkit`, ...) and
      installs;
    - CUDA wheel indexes and CUDA pins installed by `run:`/`script:` steps (also an index a
      shell variable of the same step holds, or one a CI variable completes:
      `--index-url https://download.pytorch.org/whl/$CUDA_TAG`);
    - CUDA wheel indexes or CUDA images held by CI variables: `env:` values (of the workflow,
      a job or a step) and GitLab `variables:` (global, also `{value: ...}`, or a job's),
      reported once, where they are set (not again where `$TORCH_INDEX` uses them); not a
      value every step that would see it replaces (a job's `env:` over the workflow's,
      a step's over both, a GitLab job's `variables:` over the global ones, which its
      `inherit: variables:` may drop).

    The commands of every `run:` step (and GitLab `before_script:`/`script:`/`after_script:`)
    are read as a shell script is, started with the CI variables the step sees (not another
    job's):
    CUD501-CUD504 report what they find there at the line inside the block.

    ## Why is this bad?
    A test suite that only runs on NVIDIA machines never shows what breaks on a Mac. The CI
    itself still works, so the severity is warning.

    ## Example
    ```yaml
    jobs:
      test:
        runs-on: [self-hosted, gpu]
        steps:
          - uses: Jimver/cuda-toolkit@v0.2.14
          - run: pip install torch --index-url https://download.pytorch.org/whl/cu121
    ```

    ## Use instead
    ```yaml
    jobs:
      test:
        strategy:
          matrix:
            os: [ubuntu-latest, macos-14]
        runs-on: ${{ matrix.os }}
        steps:
          - run: pip install torch
    ```
    keeping the GPU job beside it. A `# noqa: CUD404` comment on the line suppresses it.
    """

    code = "CUD404"
    name = "cuda-only-ci"
    message = "CI tied to CUDA"
    severity = Severity.WARNING
    file_kinds = frozenset({FileKind.CI})
    VALID = (
        Valid("on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
              "      - uses: actions/checkout@v4\n      - run: pip install torch\n"
              "      - run: echo 'no cuda here'\n", path=".github/workflows/ci.yml"),
        Valid("test:\n  image: python:3.11\n  script:\n    - pytest\n", path=".gitlab-ci.yml"),
        Valid("on: workflow_call\nenv:\n  DEVICE: cuda:0\n  CUDA_HOME: /usr/local/cuda\n"
              "  INDEX: https://download.pytorch.org/whl/cpu\n  IMAGE: python:3.11-slim\n"
              "jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: pytest\n",
              path=".github/workflows/reusable.yml"),
        Valid("name: setup\nruns:\n  using: composite\n  steps:\n"
              "    - run: pip install torch\n      shell: bash\n",
              path=".github/actions/setup/action.yml"),
        Valid("variables:\n  TORCH_INDEX: https://download.pytorch.org/whl/cu121\n"
              "test:\n  variables:\n    TORCH_INDEX: https://download.pytorch.org/whl/cpu\n"
              "  script:\n    - pip install torch --index-url $TORCH_INDEX\n",
              path=".gitlab-ci.yml"),
    )
    INVALID = (
        Invalid("jobs:\n  test:\n    runs-on: [self-hosted, linux, gpu]\n    container:\n"
                "      image: nvidia/cuda:12.1.0-devel-ubuntu22.04\n    steps:\n"
                "      - uses: Jimver/cuda-toolkit@v0.2.14\n      - run: |\n"
                "          pip install torch --index-url https://download.pytorch.org/whl/cu121\n"
                "          pytest\n", path=".github/workflows/gpu-tests.yml", count=4),
        Invalid("jobs:\n  test:\n    strategy:\n      matrix:\n"
                "        runner: [ubuntu-latest, linux-gpu-a100]\n"
                "    runs-on: ${{ matrix.runner }}\n", path=".github/workflows/ci.yaml"),
        Invalid("image: nvcr.io/nvidia/pytorch:24.01-py3\ntest:\n  tags: [gpu]\n  script:\n"
                "    - pip install cupy-cuda12x\n", path=".gitlab-ci.yml", count=3),
        Invalid("name: setup-cuda\nruns:\n  using: composite\n  steps:\n"
                "    - uses: Jimver/cuda-toolkit@v0.2.14\n"
                "    - run: pip install torch --index-url https://download.pytorch.org/whl/cu121\n"
                "      shell: bash\n", path=".github/actions/setup-cuda/action.yml", count=2),
        Invalid("on:\n  workflow_call:\nenv:\n  TORCH_INDEX: https://download.pytorch.org/whl/cu121\n"
                "  IMAGE: nvidia/cuda:12.1.0-devel-ubuntu22.04\njobs:\n  test:\n"
                "    runs-on: ubuntu-latest\n    container: ${{ env.IMAGE }}\n    steps:\n"
                "      - run: pip install torch --index-url $TORCH_INDEX\n",
                path=".github/workflows/reusable.yml", count=2),
        Invalid("test:\n  image: python:3.11\n  variables:\n"
                "    TORCH_INDEX_URL: \"https://download.pytorch.org/whl/cu121\"\n  script:\n"
                "    - pip install torch --extra-index-url ${TORCH_INDEX_URL}\n",
                path=".gitlab-ci.yml"),
    )

    def check(self, source: SourceFile) -> Iterator[Finding]:
        parsed = yaml_lines.read(source)
        if isinstance(parsed, Finding):
            yield parsed
            return
        gitlab = source.path.name.startswith(".gitlab-ci")
        for document in parsed:
            if gitlab:
                yield from self._gitlab(source, document)
                continue
            for _, job in yaml_lines.items(yaml_lines.get(document, "jobs")):
                yield from self._github_job(source, job)
            # a composite action (.github/actions/<name>/action.yml)
            yield from self._steps(source, yaml_lines.get(yaml_lines.get(document, "runs"),
                                                          "steps"))
        yield from self._variables(source)
        yield from self._scripts(source)

    def _github_job(self, source: SourceFile, job: Node) -> Iterator[Finding]:
        yield from self._runner(source, job, yaml_lines.get(job, "runs-on"))
        container = yaml_lines.get(job, "container")
        yield from self._image(source, yaml_lines.get(container, "image") or container)
        for _, service in yaml_lines.items(yaml_lines.get(job, "services")):
            yield from self._image(source, yaml_lines.get(service, "image") or service)
        yield from self._steps(source, yaml_lines.get(job, "steps"))

    def _variables(self, source: SourceFile) -> Iterator[Finding]:
        """CUDA wheel indexes and CUDA images held by CI variables (`env:` values, GitLab
        `variables:`), used by the steps as `$TORCH_INDEX` or `${{ env.IMAGE }}`: reported
        where they are set, if a step sees the value (one every step sets otherwise is not)."""
        seen: dict[int, ci.Variable] = {}
        for step in ci.steps_of(source.text or ""):
            for variable in step.variables.values():
                seen.setdefault(id(variable.node), variable)
        for variable in seen.values():
            message = _held(variable.value)
            if message is not None:
                yield self._at(source, variable.node, message)

    def _steps(self, source: SourceFile, steps: Node | None) -> Iterator[Finding]:
        for step in yaml_lines.entries(steps):
            uses = yaml_lines.get(step, "uses")
            action = (yaml_lines.scalar(uses) or "").partition("@")[0]
            if action.startswith("docker://"):
                yield from self._image(source, uses)
            elif uses is not None and not action.startswith("./") \
                    and re.search(r"cuda|nvidia", action, re.IGNORECASE):
                # a local action (`./.github/actions/setup-cuda`) is read where it is
                yield self._at(source, uses, f"`{action}` installs the CUDA toolkit: {_ADVICE}")

    def _runner(self, source: SourceFile, job: Node, runs_on: Node | None) -> Iterator[Finding]:
        labels = yaml_lines.entries(yaml_lines.get(runs_on, "labels") or runs_on)
        for label in labels:
            text = yaml_lines.scalar(label) or ""
            if _GPU_LABEL.search(text):
                yield self._at(source, label, f"runs on the GPU runner `{text}`: {_ADVICE}")
            matrix = yaml_lines.get(yaml_lines.get(job, "strategy"), "matrix")
            for key in _MATRIX.findall(text):
                values = yaml_lines.entries(yaml_lines.get(matrix, key))
                values += [yaml_lines.get(entry, key) for entry in
                           yaml_lines.entries(yaml_lines.get(matrix, "include"))
                           if yaml_lines.get(entry, key) is not None]
                for value in values:
                    if _GPU_LABEL.search(yaml_lines.scalar(value) or ""):
                        yield self._at(source, value, f"runs on the GPU runner "
                                       f"`{yaml_lines.scalar(value)}`: {_ADVICE}")

    def _gitlab(self, source: SourceFile, document: Node) -> Iterator[Finding]:
        default = yaml_lines.get(document, "default")
        for holder in (document, default):
            yield from self._gitlab_images(source, holder)
        for job in ci.gitlab_jobs(document):
            for tag in yaml_lines.entries(yaml_lines.get(job, "tags")):
                if _GPU_LABEL.search(yaml_lines.scalar(tag) or ""):
                    yield self._at(source, tag, f"runs on the GPU runner tag "
                                   f"`{yaml_lines.scalar(tag)}`: {_ADVICE}")
            yield from self._gitlab_images(source, job)

    def _gitlab_images(self, source: SourceFile, holder: Node | None) -> Iterator[Finding]:
        image = yaml_lines.get(holder, "image")
        yield from self._image(source, yaml_lines.get(image, "name") or image)
        for service in yaml_lines.entries(yaml_lines.get(holder, "services")):
            yield from self._image(source, yaml_lines.get(service, "name") or service)

    def _image(self, source: SourceFile, node: Node | None) -> Iterator[Finding]:
        image = yaml_lines.scalar(node) or ""
        if node is not None and cuda_image(image):
            yield self._at(source, node, f"runs in the CUDA image `{image}`: {_ADVICE}")

    def _scripts(self, source: SourceFile) -> Iterator[Finding]:
        """The pins each step's commands install, with the CI variables it starts with
        (`--index-url https://download.pytorch.org/whl/$CUDA_TAG`): not those holding a whole
        index, which `_variables` reports where they are set."""
        for commands, variables in scripts.scripts_of(source):
            yield from self._script(source, commands, {
                name: value for name, value in variables.items() if _held(value) is None})

    def _script(self, source: SourceFile, commands: tuple[Command, ...],
                variables: Mapping[str, str]) -> Iterator[Finding]:
        found = [*pip_commands(commands, variables),
                 *((c, w, p) for c in commands for w, p in conda_command(c))]
        for command, word, problem in sorted(found, key=lambda f: f[0].position(f[1])):
            yield finding(self, source, command.position(word), Problem(
                problem.message, self.severity), prefix="a CI step installs CUDA: ")

    def _at(self, source: SourceFile, node: Node, message: str) -> Finding:
        return self.finding(source, *yaml_lines.value_start(node), message=message)


def _held(value: str) -> str | None:
    """What CUD404 says of a CI variable holding `value`: a CUDA wheel index or image."""
    text = value.strip()
    if "://" in text and is_cuda_url(text):
        return f"sets the CUDA wheel index `{text}`: {_ADVICE}"
    if _looks_like_image(text) and cuda_image(text):
        return f"sets the CUDA image `{text}`: {_ADVICE}"
    return None


def _looks_like_image(text: str) -> bool:
    """`nvidia/cuda:12.1.0-devel-ubuntu22.04`, not a path, a URL or a device (`cuda:0`)."""
    if text.startswith("docker://"):
        return True
    return "/" in text and "://" not in text and not text.startswith(("/", ".", "$", "~")) \
        and not any(c.isspace() for c in text)

