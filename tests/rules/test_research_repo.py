"""The research-repository fixture (fixtures/research_repo): a small "fast-attention" project
with a CUDA extension, kernels, pins, containers, scripts, CI and a notebook. Every finding
is listed here by hand from the fixture's lines, so a rule that starts or stops reporting
anywhere in it fails this test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cudalint.cli import main

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "research_repo"

# (file, notebook cell, row, column, code)
EXPECTED = {
    # setup.py: the CUDAExtension (its CppExtension sibling and `nvcc` flags say nothing new)
    ("setup.py", None, 7, 5, "CUD301"),
    # csrc: one finding per CUDA source file; the .cpp files are not read
    ("csrc/attention_kernel.cu", None, 1, 1, "CUD302"),
    ("csrc/attention_kernel.cuh", None, 1, 1, "CUD302"),
    # CMakeLists.txt: project(... CUDA), find_package(CUDAToolkit); the comment is silent
    ("CMakeLists.txt", None, 3, 1, "CUD304"),
    ("CMakeLists.txt", None, 6, 1, "CUD304"),
    # fastattn/attention.py: flash-attn in try/except ImportError (guarded), the extension
    ("fastattn/attention.py", None, 7, 10, "CUD201"),
    ("fastattn/attention.py", None, 13, 8, "CUD305"),
    # fastattn/kernels.py: cupy and numba.cuda imports, RawKernel, @cuda.jit
    ("fastattn/kernels.py", None, 3, 8, "CUD201"),
    ("fastattn/kernels.py", None, 4, 19, "CUD201"),
    ("fastattn/kernels.py", None, 12, 16, "CUD303"),
    ("fastattn/kernels.py", None, 15, 2, "CUD303"),
    # fastattn/bench.py: nvidia-smi under try/except FileNotFoundError (guarded), env vars;
    # the docstring mentioning nvidia-smi is silent
    ("fastattn/bench.py", None, 12, 40, "CUD501"),
    ("fastattn/bench.py", None, 19, 16, "CUD502"),
    ("fastattn/bench.py", None, 23, 27, "CUD502"),
    # environment.yml: nvidia channel, pytorch-cuda, nvidia::cuda-nvcc, flash-attn under pip:
    ("environment.yml", None, 4, 5, "CUD401"),
    ("environment.yml", None, 9, 5, "CUD401"),
    ("environment.yml", None, 10, 5, "CUD401"),
    ("environment.yml", None, 15, 9, "CUD401"),
    # requirements.txt: torch==2.3.0 is silent; nvidia-ml-py (pynvml) is not
    ("requirements.txt", None, 5, 1, "CUD402"),
    # requirements-gpu.txt: the -r include is not followed (requirements.txt is read anyway)
    ("requirements-gpu.txt", None, 2, 19, "CUD402"),
    ("requirements-gpu.txt", None, 3, 1, "CUD402"),
    ("requirements-gpu.txt", None, 4, 1, "CUD402"),
    ("requirements-gpu.txt", None, 5, 1, "CUD402"),
    ("requirements-gpu.txt", None, 6, 1, "CUD402"),
    # pyproject.toml: cupy in the dependencies, flash-attn and triton in the gpu extra
    ("pyproject.toml", None, 14, 3, "CUD402"),
    ("pyproject.toml", None, 19, 3, "CUD402"),
    ("pyproject.toml", None, 20, 3, "CUD402"),
    # Dockerfile: the CUDA base image through ARG, ENV, nvcc in RUN; the docs stage is clean
    ("Dockerfile", None, 3, 6, "CUD403"),
    ("Dockerfile", None, 5, 5, "CUD502"),
    ("Dockerfile", None, 6, 5, "CUD502"),
    ("Dockerfile", None, 18, 5, "CUD501"),
    # docker-compose.yml: runtime: nvidia, NVIDIA_VISIBLE_DEVICES, the GPU reservation
    ("docker-compose.yml", None, 5, 14, "CUD403"),
    ("docker-compose.yml", None, 7, 9, "CUD502"),
    ("docker-compose.yml", None, 20, 15, "CUD403"),
    # Makefile: $(NVCC) is nvcc; CUDA_ARCH is a make variable, and the comment is silent
    ("Makefile", None, 10, 2, "CUD501"),
    # scripts/train.slurm: --gres, module load cuda (not python), exports, nvidia-smi; echo
    ("scripts/train.slurm", None, 4, 9, "CUD503"),
    ("scripts/train.slurm", None, 8, 13, "CUD503"),
    ("scripts/train.slurm", None, 11, 8, "CUD502"),
    ("scripts/train.slurm", None, 12, 8, "CUD502"),
    ("scripts/train.slurm", None, 15, 1, "CUD501"),
    # scripts/setup_env.sh: the `command -v` probe is silent, the branch it guards is not
    ("scripts/setup_env.sh", None, 7, 5, "CUD501"),
    ("scripts/setup_env.sh", None, 8, 42, "CUD402"),
    ("scripts/setup_env.sh", None, 15, 25, "CUD504"),
    ("scripts/setup_env.sh", None, 16, 8, "CUD502"),
    ("scripts/setup_env.sh", None, 17, 8, "CUD502"),
    ("scripts/setup_env.sh", None, 19, 1, "CUD501"),
    # the workflow: the GPU runner, the NGC image, the toolkit action, the cu121 index
    (".github/workflows/gpu-tests.yml", None, 15, 35, "CUD404"),
    (".github/workflows/gpu-tests.yml", None, 17, 14, "CUD404"),
    (".github/workflows/gpu-tests.yml", None, 21, 15, "CUD404"),
    (".github/workflows/gpu-tests.yml", None, 27, 54, "CUD404"),
    # the notebook: !nvidia-smi and %env in cell 2, .cuda() in cell 3; markdown is silent
    ("notebooks/explore.ipynb", 2, 1, 2, "CUD501"),
    ("notebooks/explore.ipynb", 2, 2, 6, "CUD502"),
    ("notebooks/explore.ipynb", 3, 1, 33, "CUD102"),
}
GUARDED = {
    ("fastattn/attention.py", 7, "CUD201"),  # try/except ImportError
    ("fastattn/bench.py", 12, "CUD501"),  # try/except FileNotFoundError
    ("pyproject.toml", 19, "CUD402"),  # an optional extra
    ("pyproject.toml", 20, "CUD402"),
    ("scripts/setup_env.sh", 7, "CUD501"),  # if command -v nvidia-smi
    ("scripts/setup_env.sh", 8, "CUD402"),
}


def _findings(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict]]:
    code = main([*args, "--output-format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _key(finding: dict, root: Path) -> tuple[str, int | None, int, int, str]:
    path = Path(finding["filename"]).relative_to(root.resolve()).as_posix()
    where = finding["location"]
    return path, finding["cell"], where["row"], where["column"], finding["code"]


def test_every_finding_of_the_research_repo(capsys):
    code, found = _findings(capsys, str(FIXTURE))
    assert code == 1
    keys = [_key(f, FIXTURE) for f in found]
    assert len(keys) == len(set(keys)), "a finding is reported twice"
    assert set(keys) == EXPECTED


def test_guarded_findings_are_one_severity_lower(capsys):
    _, found = _findings(capsys, str(FIXTURE))
    guarded = {(key[0], key[2], key[4]) for f in found if f["guarded"]
               for key in [_key(f, FIXTURE)]}
    assert guarded == GUARDED
    severity = {(_key(f, FIXTURE)[0], f["location"]["row"]): f["severity"] for f in found}
    assert severity["scripts/setup_env.sh", 7] == "warning"  # an error, guarded
    assert severity["scripts/train.slurm", 11] == "info"  # setting a variable
    assert severity[".github/workflows/gpu-tests.yml", 15] == "warning"


def test_selecting_a_family(capsys):
    _, found = _findings(capsys, str(FIXTURE), "--select", "CUD4")
    assert {_key(f, FIXTURE) for f in found} == {k for k in EXPECTED if k[4].startswith("CUD4")}


def test_excluding_kinds(capsys, tmp_path):
    copy = tmp_path / "research_repo"
    shutil.copytree(FIXTURE, copy)
    with (copy / "pyproject.toml").open("a") as pyproject:
        pyproject.write('\n[tool.cudalint]\nexclude-kinds = ["notebook", "cuda-source"]\n')
    _, found = _findings(capsys, str(copy))
    assert {_key(f, copy) for f in found} == {
        k for k in EXPECTED if not k[0].startswith("notebooks/") and k[4] != "CUD302"
    }


def test_fix_touches_only_the_notebook_cell(capsys, tmp_path):
    copy = tmp_path / "research_repo"
    shutil.copytree(FIXTURE, copy)
    before = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    main(["check", "--fix", str(copy)])
    capsys.readouterr()
    changed = [p.relative_to(copy).as_posix() for p, data in before.items()
               if p.read_bytes() != data]
    assert changed == ["notebooks/explore.ipynb"]
    notebook = json.loads((copy / "notebooks" / "explore.ipynb").read_text())
    # The helper is written once, inline, on top of the first cell that needs it: defined
    # even where the cell above fails (`from fastattn import attention`, not installed).
    assert notebook["cells"][1] == json.loads((FIXTURE / "notebooks" / "explore.ipynb")
                                              .read_text())["cells"][1]
    cell = notebook["cells"][2]
    assert "def pick_device(device=None):  # cudalint device helper\n" in cell["source"]
    assert cell["source"][-5] == "q = torch.randn(1, 8, 1024, 64).to(pick_device())\n"
    assert cell["outputs"] == json.loads((FIXTURE / "notebooks" / "explore.ipynb").read_text(
    ))["cells"][2]["outputs"]


# fixtures/research_repo2: a diffusion trainer written as research code often is, one file per
# class of issue 10 (guards, feature gates, device selection, native builds, scripts and CI).
FIXTURE_2 = FIXTURE.parent / "research_repo2"
EXPECTED_2 = {
    # difftrain/guards.py: `use_cuda = ... and not args.no_cuda` then `if use_cuda:` guards;
    # `if not HAS_GPU:` holds a print; the early return guards the synchronize below it;
    # "gloo" if not available else "nccl" is guarded; args.use_cuda, cfg.cuda and opt.gpu
    # are user switches (unguarded); `impl == "cuda" and x.device.type == "cuda"` guards
    ("difftrain/guards.py", None, 13, 9, "CUD107"),
    ("difftrain/guards.py", None, 14, 23, "CUD102"),
    ("difftrain/guards.py", None, 23, 5, "CUD105"),
    ("difftrain/guards.py", None, 28, 60, "CUD701"),
    ("difftrain/guards.py", None, 35, 23, "CUD102"),
    ("difftrain/guards.py", None, 37, 22, "CUD102"),
    ("difftrain/guards.py", None, 39, 9, "CUD105"),
    ("difftrain/guards.py", None, 45, 9, "CUD105"),
    # difftrain/amp_gates.py: the scaler's `enabled=` and the kept `scaler_enabled`; pinning,
    # the kernel choice `impl == "cuda"`, the `if ... and ...` and the `while` test are silent
    ("difftrain/amp_gates.py", None, 12, 53, "CUD108"),
    ("difftrain/amp_gates.py", None, 17, 31, "CUD108"),
    # difftrain/devices.py: f-strings with and without placeholders, % and .format; the
    # MPS-aware pick_device is silent, legacy_device is not; the else that exits after a
    # "does not support training without GPU" message, and os._exit after one; the choice
    # written the other way round
    ("difftrain/devices.py", None, 9, 43, "CUD101"),
    ("difftrain/devices.py", None, 10, 34, "CUD101"),
    ("difftrain/devices.py", None, 11, 34, "CUD101"),
    ("difftrain/devices.py", None, 12, 27, "CUD101"),
    ("difftrain/devices.py", None, 12, 55, "CUD101"),
    ("difftrain/devices.py", None, 24, 25, "CUD103"),
    ("difftrain/devices.py", None, 28, 5, "CUD112"),
    ("difftrain/devices.py", None, 29, 30, "CUD105"),
    ("difftrain/devices.py", None, 36, 5, "CUD112"),
    ("difftrain/devices.py", None, 42, 12, "CUD103"),  # "cpu" if not ... else "cuda"
    # difftrain/compat.py: the torch.cuda.amp fallback import, not the decorators using it
    ("difftrain/compat.py", None, 10, 32, "CUD106"),
    ("difftrain/compat.py", None, 10, 44, "CUD106"),
    # difftrain/parallel.py: device_ids set through kwargs["device_ids"] and a dict literal
    ("difftrain/parallel.py", None, 7, 5, "CUD702"),
    ("difftrain/parallel.py", None, 12, 19, "CUD702"),
    # difftrain/ops/build.py: .cu sources built by a comprehension, extra_cuda_cflags, the
    # nvcc entry set before the CppExtension, nvcc through built paths; CUDA_HOME after the
    # `if CUDA_HOME is None: warn; return` is guarded
    ("difftrain/ops/build.py", None, 13, 12, "CUD301"),
    ("difftrain/ops/build.py", None, 17, 12, "CUD301"),
    ("difftrain/ops/build.py", None, 23, 24, "CUD301"),
    ("difftrain/ops/build.py", None, 29, 36, "CUD501"),
    ("difftrain/ops/build.py", None, 30, 21, "CUD501"),
    ("difftrain/ops/build.py", None, 30, 34, "CUD301"),
    ("difftrain/ops/build.py", None, 38, 28, "CUD301"),
    # scripts/install_cuda.sh: CUDA_FLAG is the script's own; installs with options anywhere
    ("scripts/install_cuda.sh", None, 6, 8, "CUD502"),
    ("scripts/install_cuda.sh", None, 9, 23, "CUD504"),
    ("scripts/install_cuda.sh", None, 10, 47, "CUD504"),
    ("scripts/install_cuda.sh", None, 11, 16, "CUD504"),
    ("scripts/install_cuda.sh", None, 12, 21, "CUD401"),
    ("scripts/install_cuda.sh", None, 12, 28, "CUD401"),
    ("scripts/install_cuda.sh", None, 12, 28, "CUD504"),
    ("scripts/install_cuda.sh", None, 13, 13, "CUD402"),
    ("scripts/install_cuda.sh", None, 13, 13, "CUD504"),
    # requirements-extra.txt and environment.yml: one package table for pip and conda names
    ("requirements-extra.txt", None, 3, 1, "CUD402"),
    ("requirements-extra.txt", None, 4, 1, "CUD402"),
    ("requirements-extra.txt", None, 5, 1, "CUD402"),
    ("requirements-extra.txt", None, 6, 1, "CUD402"),
    ("requirements-extra.txt", None, 7, 1, "CUD402"),
    ("environment.yml", None, 6, 5, "CUD401"),
    ("environment.yml", None, 7, 5, "CUD401"),
    ("environment.yml", None, 9, 9, "CUD401"),
    # the composite action's steps; the reusable workflow's env: index and image (`cuda:0`
    # is a device, and the local action is read where it is)
    (".github/actions/setup-cuda/action.yml", None, 6, 13, "CUD404"),
    (".github/actions/setup-cuda/action.yml", None, 9, 42, "CUD404"),
    (".github/workflows/reusable-gpu.yml", None, 6, 16, "CUD404"),
    (".github/workflows/reusable-gpu.yml", None, 7, 10, "CUD404"),
    # issue 28: the composite action's `run: |` block is read as a script (CUD504 at the row
    # inside it); the nvidia/cuda base image of docker/Dockerfile-gpu; n_gpus bound only under
    # the CUDA check (the MPS elif binds nothing) and read after it; ext_a/setup.py builds
    # `_ext_a`, imported beside it; tiny-cuda-nn by its repository's URL; the float64
    # schedule kept on self, passed by q_sample to a helper that moves it before `.float()`
    (".github/actions/setup-cuda/action.yml", None, 13, 33, "CUD504"),
    (".github/workflows/reusable-gpu.yml", None, 21, 35, "CUD504"),  # the echo is silent
    ("docker/Dockerfile-gpu", None, 1, 6, "CUD403"),
    ("difftrain/launch.py", None, 9, 18, "CUD105"),
    ("difftrain/launch.py", None, 12, 29, "CUD114"),
    ("ext_a/setup.py", None, 6, 18, "CUD301"),
    ("ext_a/ext_a.py", None, 2, 8, "CUD305"),
    ("requirements-extra.txt", None, 8, 1, "CUD402"),
    # flash-attention by its repository's URL under environment.yml's pip: (CLIP's is silent)
    ("environment.yml", None, 10, 9, "CUD401"),
    ("difftrain/diffusion.py", None, 8, 11, "CUD601"),
    # float64 arrays stacked with np.stack, then moved; the float32 ones below are silent
    ("difftrain/diffusion.py", None, 25, 12, "CUD601"),
    # issue 28, guards: "nccl" chosen only where dist.is_nccl_available() (guarded); the
    # early exit whose test is an `or` guards the synchronize after it; a parameter
    # `use_cuda=True` is the caller's switch (unguarded)
    ("difftrain/guards.py", None, 55, 15, "CUD701"),
    ("difftrain/guards.py", None, 62, 5, "CUD105"),
    ("difftrain/guards.py", None, 69, 15, "CUD102"),
    # difftrain/fused.py: triton whose `except ImportError` only raises (required, unguarded);
    # `assert(x.is_cuda == True)`; the elif `grad.is_cuda == False` that raises; the device
    # dispatch whose else rejects unknown types, `.dequantize()` under `if x.is_quantized:`
    # and `CUDA_VISIBLE_DEVICES = "-1"` in the cpu/mps branch are silent
    ("difftrain/fused.py", None, 7, 12, "CUD201"),
    ("difftrain/fused.py", None, 13, 5, "CUD112"),
    ("difftrain/fused.py", None, 20, 5, "CUD112"),
    # tests/test_fused.py: tests marked for CUDA (`requires_cuda`, `skipif`, the project's own
    # `requires_gpu`) are guarded, and their `assert x.half().is_cuda` is no requirement
    ("tests/test_fused.py", None, 10, 23, "CUD102"),
    ("tests/test_fused.py", None, 16, 30, "CUD101"),
    ("tests/test_fused.py", None, 22, 5, "CUD105"),
}
GUARDED_2 = {
    ("difftrain/guards.py", 55, "CUD701"),  # "nccl" if dist.is_nccl_available() else "gloo"
    ("difftrain/guards.py", 62, "CUD105"),  # after `if not ...is_available() or not flash:`
    ("tests/test_fused.py", 10, "CUD102"),  # @pytest.mark.requires_cuda
    ("tests/test_fused.py", 16, "CUD101"),  # @pytest.mark.skipif(not ...is_available())
    ("tests/test_fused.py", 22, "CUD105"),  # @requires_gpu, the project's own marker
    ("difftrain/launch.py", 9, "CUD105"),  # under torch.cuda.is_available()
    ("difftrain/guards.py", 13, "CUD107"),  # if use_cuda: (a variable holding a probe)
    ("difftrain/guards.py", 14, "CUD102"),
    ("difftrain/guards.py", 23, "CUD105"),  # after `if not torch.cuda.is_available(): return`
    ("difftrain/guards.py", 28, "CUD701"),  # the branch of the conditional that needs CUDA
    ("difftrain/guards.py", 45, "CUD105"),  # one operand of the `and` is a device test
    ("difftrain/devices.py", 29, "CUD105"),
    ("difftrain/ops/build.py", 38, "CUD301"),  # after `if CUDA_HOME is None: ... return`
}


def test_every_finding_of_the_second_research_repo(capsys):
    code, found = _findings(capsys, str(FIXTURE_2))
    assert code == 1
    keys = [_key(f, FIXTURE_2) for f in found]
    assert len(keys) == len(set(keys)), "a finding is reported twice"
    assert set(keys) == EXPECTED_2
    guarded = {(key[0], key[2], key[4]) for f in found if f["guarded"]
               for key in [_key(f, FIXTURE_2)]}
    assert guarded == GUARDED_2


def test_guarded_conditional_branch_does_not_claim_a_mac_failure(capsys):
    _, found = _findings(capsys, str(FIXTURE_2), "--select", "CUD701")
    assert len(found) == 2  # under `not torch.cuda.is_available()`, `dist.is_nccl_available()`
    for nccl in found:
        assert nccl["severity"] == "warning"
        assert "raises on a Mac" not in nccl["message"]


def test_no_fix_rewrites_a_branch_that_only_runs_on_cuda(capsys, tmp_path):
    copy = tmp_path / "research_repo2"
    shutil.copytree(FIXTURE_2, copy)
    main(["check", "--fix", "--unsafe-fixes", "--select", "CUD7", str(copy)])
    capsys.readouterr()
    guards = (copy / "difftrain" / "guards.py").read_text()
    assert 'backend = "gloo" if not torch.cuda.is_available() else "nccl"' in guards


def test_no_safe_fix_rewrites_a_test_marked_for_cuda(capsys, tmp_path):
    copy = tmp_path / "research_repo2"
    shutil.copytree(FIXTURE_2, copy)
    tests = copy / "tests" / "test_fused.py"
    before = tests.read_text()
    main(["check", "--fix", "--select", "CUD1", str(copy)])
    capsys.readouterr()
    assert tests.read_text() == before  # requires_cuda, skipif, the project's requires_gpu
    assert "x = x.to(pick_device())" in (copy / "difftrain" / "guards.py").read_text()
    main(["check", "--fix", "--unsafe-fixes", "--select", "CUD1", str(copy)])
    capsys.readouterr()
    after = tests.read_text()
    assert "torch.ones(4).cuda()" not in after and 'device="cuda"' not in after
    assert "    synchronize()\n" in after


def test_a_float64_schedule_kept_on_self_is_followed_into_the_helper(capsys):
    _, found = _findings(capsys, str(FIXTURE_2 / "difftrain" / "diffusion.py"),
                         "--select", "CUD601")
    helper = next(f for f in found if f["location"]["row"] == 8)
    # self.betas is float64, alphas_cumprod is derived from it, and q_sample passes its sqrt
    assert helper["severity"] == "error"
    assert helper["message"].startswith(
        "`q_sample` passes a float64 array (`np.sqrt(self.alphas_cumprod)`, line 18) as `arr`")
