"""What ties a smoke report to the project it ran on: the schema it follows, the project's name
and commit (and whether the tree was dirty), the hashes of the project files the run used.

`cudalint smoke` writes these fields (`stamp`); `cudalint report` checks a file against them
(`validate`) and compares the run with the project as it is now (`matches`). Standard library
only: the report reads smoke files without torch.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import math
import posixpath
import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cudalint.config import MAX_CONFIG_SIZE
from cudalint.files import ReadError, chunks, read_text
from cudalint.runtime.smoke import schema
from cudalint.runtime.smoke.report import CHECK_NAMES, Status
from cudalint.runtime.smoke.tolerances import COMMAND_LINE, DEFAULT, PYPROJECT

SCHEMA = "cudalint-smoke/1"
VERDICTS = ("pass", "fail")
# A smoke run records the project files it used: a monorepo's imports stay far below this.
MAX_FILES = 10_000
_DEVICE_TYPES = ("cpu", "mps", "cuda")
# How the compare check words its largest difference (checks.reference_check): "largest abs
# diff 5.07e-07 (logits), at most 1.2e-05 allowed there".
LARGEST = re.compile(r"largest abs diff (?P<value>[^\s;,]+) \((?P<output>[^)]*)\)"
                     r"(?:, at most (?P<allowed>[^\s;,]+) allowed there)?")

# How a check words its failure (checks.py, training.py): a check whose status is pass or warn
# under such a detail was edited after the run. Wording smoke no longer writes only stops this
# finding it.
FAILURE_WORDS = {
    "compare": re.compile(r"^\d+ difference\(s\) from |^the reference run on cpu crashed"),
    "determinism": re.compile(r"^repeat \d+ (with the same seed differs|crashed)"),
    "checkpoint": re.compile(r"^torch\.save then torch\.load\(.*failed|^loaded tensors on |"
                             r"^reloaded values differ"),
    "training": re.compile(r"^\d+ \S+ step\(s\) over \d+ parameter\(s\)[^:]*: (?:NaN loss at |"
                           r"infinite loss at |NaN or infinity in the gradient|zero gradients |"
                           r"frozen weights: |constant loss: |the loss did not go down |"
                           r"\d+ step\(s\) here, |loss at step \d+: )"),
}

_SHA256 = schema.Leaf("string", test=lambda text: re.fullmatch(r"[0-9a-f]{64}", text) is not None,
                      asks="(a sha256 in hex)")
_DEVICE = schema.Leaf("string", test=lambda text: text.partition(":")[0] in _DEVICE_TYPES,
                      asks="(cpu, mps or cuda)")
_ENVIRONMENT = schema.Record(
    required={"python": schema.STRING, "os": schema.STRING, "machine": schema.STRING,
              "torch": schema.STRING, "device": _DEVICE},
    optional={"os_release": schema.STRING, "rosetta": schema.OPTIONAL_BOOLEAN,
              "cuda_available": schema.BOOLEAN, "cuda_version": schema.OPTIONAL_STRING,
              "mps_built": schema.BOOLEAN, "mps_available": schema.BOOLEAN,
              "device_name": schema.OPTIONAL_STRING,
              "precision": schema.Record(optional={
                  "default_dtype": schema.STRING, "float32_matmul_precision": schema.STRING,
                  "autocast": schema.ListOf(schema.STRING)})})
_CHECK = schema.Record(required={"name": schema.OneOf(CHECK_NAMES),
                                 "status": schema.OneOf(tuple(s.value for s in Status)),
                                 "detail": schema.STRING})
_HAZARD = schema.Record(
    required={"kind": schema.STRING},
    optional={"severity": schema.OneOf(("error", "warning")),
              "subject": schema.OPTIONAL_STRING, "op": schema.OPTIONAL_STRING,
              "dtype": schema.OPTIONAL_STRING, "predicted": schema.BOOLEAN,
              "count": schema.COUNT, "detail": schema.STRING,
              "where": schema.ListOf(schema.STRING)})
_OPS = schema.Record(optional={
    "total": schema.COUNT, "counts": schema.MapOf(schema.COUNT),
    "devices": schema.MapOf(schema.ListOf(schema.STRING)),
    "fallbacks": schema.ListOf(schema.STRING),
    "without_mps_kernel": schema.ListOf(schema.STRING)})
_ERROR = schema.Record(nullable=True, optional={
    key: schema.OPTIONAL_STRING for key in ("phase", "error_type", "message", "location", "code",
                                            "innermost", "innermost_code", "output_tail")})
_PER_OUTPUT = schema.Record(required={"rtol": schema.TOLERANCE_VALUE,
                                      "atol": schema.TOLERANCE_VALUE})
_APPLIED = schema.Leaf("number", test=lambda value: value >= 0, asks="from 0 up")
# A number JSON cannot hold, as smoke writes it (compare.json_number): 'nan', 'inf', '-inf'.
_NON_FINITE = schema.OneOf(("nan", "inf", "-inf"))
_LOSS = schema.AnyOf((schema.NUMBER, _NON_FINITE, schema.NULL),
                     "a finite number, 'nan', 'inf', '-inf' or null")
_DIFFERENCE = schema.AnyOf((_APPLIED, schema.OneOf(("nan", "inf")), schema.NULL),
                           "a finite number from 0 up, 'nan', 'inf' or null")
_TRAINING = schema.Record(
    required={"optimizer": schema.STRING, "steps": schema.COUNT,
              "losses": schema.ListOf(_LOSS)},
    optional={"model": schema.OPTIONAL_STRING, "parameters": schema.COUNT,
              "backwards": schema.COUNT, "reference_losses": schema.ListOf(_LOSS)})
# Each compared output: the rtol and atol applied to it (null: compared exactly), its largest
# absolute and relative difference, and whether it is within them (compare.measure).
_DIFFERENCE_ROW = schema.Record(
    required={"output": schema.STRING, "within": schema.BOOLEAN},
    optional={"dtype": schema.OPTIONAL_STRING, "rtol": schema.TOLERANCE_VALUE,
              "atol": schema.TOLERANCE_VALUE, "max_abs": _DIFFERENCE,
              "max_rel": _DIFFERENCE})
# A smoke report, to its leaves: `cudalint smoke --json` writes these fields (a section only
# people read, like the batch ramp's table, is kept unchecked).
SHAPE = schema.Record(
    required={
        "schema": schema.STRING,
        "cudalint": schema.STRING,
        "date": schema.STRING,  # ISO 8601, UTC
        "verdict": schema.OneOf(VERDICTS),
        "target": schema.STRING,
        "device": _DEVICE,
        "environment": _ENVIRONMENT,
        "checks": schema.ListOf(_CHECK, limit=len(CHECK_NAMES)),
        "project": schema.Record(required={"name": schema.STRING, "root": schema.STRING,
                                           "commit": schema.OPTIONAL_STRING,
                                           "dirty": schema.OPTIONAL_BOOLEAN}),
        # {path relative to the project root (posix): sha256 hex}
        "files": schema.MapOf(_SHA256, limit=MAX_FILES),
        "tolerance": schema.Record(
            required={"rtol": schema.TOLERANCE_VALUE, "atol": schema.TOLERANCE_VALUE,
                      "source": schema.OneOf((DEFAULT, COMMAND_LINE, PYPROJECT)),
                      "per_output": schema.MapOf(_PER_OUTPUT)},
            # a float32 output's pair, the defaults as numbers; whether a declared one was
            # committed before the run (null outside git)
            optional={"float32": schema.Record(required={"rtol": _APPLIED, "atol": _APPLIED}),
                      "committed": schema.OPTIONAL_BOOLEAN}),
        "packages": schema.MapOf(schema.STRING, non_empty=True),  # {distribution: version}
    },
    optional={"hazards": schema.ListOf(_HAZARD), "ops": _OPS,
              "warnings": schema.ListOf(schema.STRING), "error": _ERROR,
              "saved_reference": schema.OPTIONAL_STRING,
              # the checks the command line asked for: {check name: the option as given}
              "requested": schema.MapOf(schema.STRING, limit=len(CHECK_NAMES),
                                        key=lambda name: name in CHECK_NAMES,
                                        key_asks="the name of a check smoke writes"),
              "training": _TRAINING,
              "differences": schema.ListOf(_DIFFERENCE_ROW),
              "elsewhere": schema.Record(required={"findings": schema.COUNT},
                                         optional={"detail": schema.STRING})})
REQUIRED = tuple(SHAPE.required)


class NotASmokeReport(ValueError):
    """The data is not a smoke report of a schema this cudalint reads; str() is one line."""


def validate(data: object, source: str) -> dict[str, Any]:
    """`data` when it is a smoke report of SCHEMA, to its leaves, that describes a run smoke
    could have made (statuses that agree with the verdict, a device its machine has), else
    NotASmokeReport naming `source` and the first reason."""
    if not isinstance(data, dict):
        raise NotASmokeReport(f"{source}: not a smoke report (not a JSON object)")
    version = data.get("schema")
    if version is None:
        raise NotASmokeReport(f"{source}: not a smoke report (no 'schema'; write one with "
                              "`cudalint smoke ... --json FILE`)")
    if version != SCHEMA:
        raise NotASmokeReport(f"{source}: smoke report schema {version!r}, this cudalint reads "
                              f"{SCHEMA!r}")
    try:
        schema.check(SHAPE, data)
    except schema.SchemaError as error:
        raise NotASmokeReport(f"{source}: not a smoke report ({error})") from None
    contradiction = _contradiction(data)
    if contradiction:
        raise NotASmokeReport(f"{source}: not a run smoke reports: {contradiction}")
    return data


def _contradiction(data: dict[str, Any]) -> str | None:
    """Why the report cannot describe a real run, in a few words; None when it can."""
    return (_device_contradiction(data["device"], data["environment"])
            or _status_contradiction(data))


def _device_contradiction(device: str, env: dict[str, Any]) -> str | None:
    kind = device.partition(":")[0]
    if env["device"] != device:
        return f"device {device!r}, but its environment says {env['device']!r}"
    machine = f"{env['os']} {env['machine']}"
    if kind == "mps" and (env["os"], env["machine"]) != ("Darwin", "arm64"):
        return f"device 'mps' on {machine}, which is not macOS on Apple silicon"
    if kind == "mps" and not (env.get("mps_built") and env.get("mps_available")):
        return f"device 'mps' on {machine} where MPS was not available"
    if kind == "cuda" and not env.get("cuda_available"):
        return f"device {device!r} on {machine} where CUDA was not available"
    return None


def _status_contradiction(data: dict[str, Any]) -> str | None:
    statuses: dict[str, str] = {}
    for check in data["checks"]:
        if check["name"] in statuses:
            return f"the check {check['name']!r} twice"
        statuses[check["name"]] = check["status"]
    failed = [name for name, status in statuses.items() if status == "fail"]
    # A check the command line asked for that did not run fails the run too (exit 2).
    unmet = [name for name in data.get("requested", {})
             if statuses.get(name, "skipped") == "skipped"]
    if data["verdict"] == "pass" and failed:
        return f"verdict 'pass' with the check {failed[0]!r} failed"
    if data["verdict"] == "pass" and unmet:
        return (f"verdict 'pass' with the check {unmet[0]!r} asked for "
                f"({data['requested'][unmet[0]]}) and not carried out")
    if data["verdict"] == "fail" and not failed and not unmet:
        return "verdict 'fail' with no check failed and none asked for left unrun"
    if data.get("error") and statuses.get("run") != "fail":
        return f"the target crashed ('error' is set), but the check 'run' is " \
               f"{statuses.get('run', 'missing')!r}"
    for check in data["checks"]:
        words = FAILURE_WORDS.get(check["name"])
        if check["status"] != "fail" and words is not None and words.search(check["detail"]):
            return (f"the check {check['name']!r} is {check['status']!r}, but its detail is a "
                    f"failure's: {check['detail'][:80]!r}")
    severe = [h for h in data.get("hazards", []) if h.get("severity") == "error"]
    if severe and statuses.get("ops") != "fail":
        return (f"a hazard of severity 'error' ({severe[0].get('subject') or severe[0]['kind']}), "
                f"but the check 'ops' is {statuses.get('ops', 'missing')!r}")
    if statuses.get("training") == "pass" and "training" in data:
        contradiction = _training_contradiction(data["training"]["losses"])
        if contradiction:
            return contradiction
    compare = next((c for c in data["checks"] if c["name"] == "compare"), None)
    if compare is not None and compare["status"] == "pass":
        return (_differences_contradiction(data.get("differences", []))
                or _compare_contradiction(compare["detail"]))
    return None


def _training_contradiction(losses: list[Any]) -> str | None:
    """A passing training check whose recorded losses are not finite or did not go down."""
    if any(isinstance(loss, str) for loss in losses):
        return "the check 'training' passed with a loss that is no finite number"
    known = [loss for loss in losses if loss is not None]
    if len(known) >= 2 and not known[-1] < known[0]:
        return (f"the check 'training' passed, but its loss went from {known[0]} to "
                f"{known[-1]} over {len(known)} steps")
    return None


def _differences_contradiction(rows: list[dict[str, Any]]) -> str | None:
    """A passing comparison with an output its `differences` put beyond the tolerance applied
    to it: marked not within, a difference that is no finite number, or, where the tolerance
    is absolute only (rtol 0, or null: compared exactly), more than atol."""
    for row in rows:
        largest, rtol, atol = row.get("max_abs"), row.get("rtol"), row.get("atol")
        beyond = (not row["within"] or isinstance(largest, str)
                  or (isinstance(largest, (int, float)) and not rtol
                      and largest > (atol or 0.0)))
        if beyond:
            return (f"the check 'compare' passed with a largest difference of {largest} "
                    f"({row['output']}), beyond the rtol {rtol}, atol {atol} applied to it")
    return None


def _compare_contradiction(detail: str) -> str | None:
    """A passing comparison whose largest difference, as its detail words it, is no number, or
    more than it allowed."""
    found = LARGEST.search(detail)
    if found is None:
        return None
    value = _float(found["value"])
    if value is None or not math.isfinite(value):
        return f"the check 'compare' passed with a largest difference of {found['value']!r}"
    allowed = _float(found["allowed"]) if found["allowed"] else None
    if allowed is not None and value > allowed:
        return (f"the check 'compare' passed with a largest difference of {found['value']} "
                f"({found['output']}), more than the {found['allowed']} its tolerance allows")
    return None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def project_name(root: Path) -> str:
    """The project's name: [project] name in pyproject.toml, else setup.py's `name=`, else the
    folder's name."""
    pyproject = _read(root / "pyproject.toml")
    if pyproject:
        match = re.search(r'(?ms)^\[project\][^\[]*?^name\s*=\s*["\']([^"\']+)["\']', pyproject)
        if match:
            return match.group(1)
    setup = _read(root / "setup.py")
    if setup:
        match = re.search(r'\bname\s*=\s*["\']([^"\']+)["\']', setup)
        if match:
            return match.group(1)
    return root.resolve().name


def project_state(root: Path) -> dict[str, Any]:
    """The project's name, root, commit and dirtiness (None for both outside a git work tree,
    or without git)."""
    commit = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no") if commit else None
    return {"name": project_name(root), "root": str(root.resolve()), "commit": commit,
            "dirty": None if status is None else bool(status)}


def file_hashes(root: Path, paths: Iterable[Path]) -> dict[str, str]:
    """sha256 of each of `paths` inside `root`, keyed by its posix path relative to `root`
    (paths outside it, and unreadable ones, are left out)."""
    root = root.resolve()
    hashes = {}
    for path in paths:
        try:
            relative = path.resolve().relative_to(root)
        except (ValueError, OSError, RuntimeError):
            continue
        digest = _digest(path)
        if digest is not None:
            hashes[relative.as_posix()] = digest
    return dict(sorted(hashes.items()))


def _digest(path: Path) -> str | None:
    """The sha256 of the regular file at `path` (never a FIFO or a device); None when it is
    not one or cannot be read."""
    digest = hashlib.sha256()
    try:
        for chunk in chunks(path):
            digest.update(chunk)
    except (OSError, ReadError):
        return None
    return digest.hexdigest()


def matches(data: Mapping[str, Any], root: Path) -> list[str]:
    """Why the smoke report `data` does not describe the project at `root` as it is now: an
    empty list when it does (same name, same commit where both have one, every file it used
    unchanged). Each file is read once, however many spellings of its path the report holds
    (`data.bin`, `./data.bin`, `a/../data.bin`)."""
    reasons = []
    project = data.get("project") or {}
    now = project_state(root)
    if project.get("name") != now["name"]:
        reasons.append(f"another project ({project.get('name')!r}, this is {now['name']!r})")
    if project.get("commit") and now["commit"] and project["commit"] != now["commit"]:
        reasons.append(f"an older or other commit ({str(project['commit'])[:12]}, now "
                       f"{now['commit'][:12]})")
    return reasons + _changed_files(data.get("files") or {}, root)


# The changed files named one by one in a stale run's reasons; the rest are counted.
_NAMED = 5


def _changed_files(files: Mapping[str, str], root: Path) -> list[str]:
    root = root.resolve()
    digests: dict[Path, str | None] = {}  # by resolved path: each file is hashed once
    gone: list[str] = []
    changed: list[str] = []
    for relative, digest in files.items():
        try:
            path = (root / posixpath.normpath(relative)).resolve()
            path.relative_to(root)
        except (ValueError, OSError, RuntimeError):  # outside the project, a link loop
            gone.append(relative)
            continue
        if path not in digests:
            digests[path] = _digest(path)
        current = digests[path]
        if current is None:
            gone.append(relative)
        elif current != digest:
            changed.append(relative)
    return _named(gone, "is gone", "are gone") + _named(changed, "changed since the run",
                                                         "changed since the run")


def _named(paths: list[str], one: str, many: str) -> list[str]:
    shown = [f"{path} {one}" for path in paths[:_NAMED]]
    if len(paths) > _NAMED:
        shown.append(f"{len(paths) - _NAMED:,} more files {many}")
    return shown


def stamp(root: Path, files: Iterable[Path], tolerance: Mapping[str, Any]) -> dict[str, Any]:
    """The identity fields of a smoke report run now on the project at `root`: every REQUIRED
    field but those of the run itself (verdict, target, device, environment, checks). `files`
    are the files the run used (the target's, the project modules it imported); `tolerance` is
    {"rtol", "atol", "source", "per_output"}."""
    import cudalint

    return {
        "schema": SCHEMA,
        "cudalint": cudalint.__version__,
        "date": utc_now(),
        "project": project_state(root),
        "files": file_hashes(root, files),
        "tolerance": dict(tolerance),
        "packages": installed_packages(),
    }


def utc_now() -> str:
    """The time now, ISO 8601 in UTC to the second: 2025-01-31T12:00:00+00:00."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def installed_packages() -> dict[str, str]:
    """Every distribution installed in this environment with its version, by name (the first
    one found on sys.path where two share a name), sorted case-insensitively."""
    found: dict[str, str] = {}
    for distribution in importlib.metadata.distributions():
        name = distribution.metadata["Name"]
        if name and name not in found:
            found[name] = distribution.version
    return dict(sorted(found.items(), key=lambda item: (item[0].lower(), item[0])))


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _read(path: Path) -> str | None:
    return read_text(path, MAX_CONFIG_SIZE)
