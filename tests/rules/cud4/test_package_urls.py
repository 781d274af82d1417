"""CUDA-only packages named by URL (CUD402 in requirements, CUD401 under `pip:`): a
well-known repository or a wheel file of theirs is the package itself."""

from __future__ import annotations

from cudalint import packages
from tests.lint import codes_at, findings

REQUIREMENTS = """\
torch==2.3.0
git+https://github.com/NVlabs/tiny-cuda-nn/#subdirectory=bindings/torch
git+https://github.com/huggingface/transformers@main
flash-attn @ git+https://github.com/Dao-AILab/flash-attention
git+ssh://git@github.com/dao-ailab/flash-attention.git@v2.5.8
https://github.com/Dao-AILab/flash-attention/releases/download/v2.5.8/flash_attn-2.5.8+cu122torch2.3cxx11abiFALSE-cp310-cp310-linux_x86_64.whl
https://github.com/NVlabs/tiny-cuda-nn-fork/archive/main.zip
./wheels/numpy-1.26.0-cp310-cp310-linux_x86_64.whl
"""


def test_repositories_and_wheel_files_in_requirements(tmp_path):
    found = findings(tmp_path, REQUIREMENTS, name="requirements.txt", codes=["CUD402"])
    assert codes_at(found) == [("CUD402", row, 1) for row in (2, 4, 5, 6)]
    by_row = {f.location.row: f.message for f in found}
    assert "builds `tiny-cuda-nn`" in by_row[2] and "pure-PyTorch hash encoding" in by_row[2]
    assert "is a build of `flash-attn`" in by_row[6]
    assert "scaled_dot_product_attention" in by_row[5]


def test_under_pip_in_an_environment_file(tmp_path):
    environment = ("name: nerf\ndependencies:\n  - python=3.10\n  - pip:\n"
                   "      - git+https://github.com/NVlabs/tiny-cuda-nn/#subdirectory=bindings/torch\n"
                   "      - git+https://github.com/openai/CLIP.git\n")
    found = findings(tmp_path, environment, name="environment.yml", codes=["CUD401"])
    assert codes_at(found) == [("CUD401", 5, 9)]


def test_repositories_are_matched_whole_and_in_any_case():
    assert packages.by_repository("nvlabs/TINY-CUDA-NN.git").name == "tiny-cuda-nn"
    assert packages.by_repository("NVlabs/tiny-cuda-nn-fork") is None
    assert packages.by_repository("huggingface/transformers") is None
