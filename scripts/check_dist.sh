#!/usr/bin/env bash
# Build the sdist and the wheel as they would be published, check them, and install the wheel in
# fresh virtual environments (without extras, and with [smoke,lsp] beside a torch already
# installed, as in a user's project), then check the bundled demo from each install.
# Usage: scripts/check_dist.sh [OUT]  (OUT: where to build, default dist/; run from anywhere)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(realpath -m "${1:-$root/dist}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

rm -rf "$out"
python -m build --outdir "$out" "$root" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
python -m twine check --strict "$out"/*
python - "$out" <<'PY'
import sys, zipfile
from pathlib import Path
wheel = next(Path(sys.argv[1]).glob("cudalint-*.whl"))
names = zipfile.ZipFile(wheel).namelist()
bad = [n for n in names if n.startswith(("tests/", "fixtures/", "benchmarks/", "scripts/"))]
assert not bad, f"the wheel holds what it must not: {bad[:5]}"
for needed in ("cudalint/data/rule_index.json", "cudalint/data/torch_cuda_api.toml",
               "cudalint/device.py", "cudalint/data/mps_ops/"):
    assert any(n.startswith(needed) for n in names), f"the wheel lacks {needed}"
print(f"{wheel.name}: {len(names)} files, no tests or fixtures, the data tables inside")
PY

wheel="$(ls "$out"/cudalint-*.whl)"
demo="$work/demo project"  # a folder with a space, as users have
cp -r "$root/fixtures/demo" "$demo"
for extras in "" "[smoke,lsp]"; do
    venv="$work/venv${extras:+-extras}"
    python -m venv "$venv"
    if [ -n "$extras" ]; then
        # The torch the project already has (the CPU wheel on this machine's disk): [smoke] asks
        # for a range, so pip keeps it instead of fetching a CUDA build.
        "$venv/bin/pip" install --quiet "torch==2.13.0"
    fi
    "$venv/bin/pip" install --quiet "$wheel$extras"
    status=0
    (cd "$work" && "$venv/bin/cudalint" check --no-cache "$demo" >"$work/out.txt") || status=$?
    if [ "$status" -ne 1 ] || ! grep -q "CUD101" "$work/out.txt"; then
        echo "the wheel's cudalint${extras} did not report the demo (exit $status)" >&2
        cat "$work/out.txt" >&2
        exit 1
    fi
    if [ -n "$extras" ]; then
        "$venv/bin/python" -c "import cudalint.lsp.server, torch, cudalint.runtime.smoke"
    fi
    echo "wheel$extras: installed, demo checked (exit $status)"
done
