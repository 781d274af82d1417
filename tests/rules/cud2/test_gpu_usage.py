"""CUD202 on realistic modules: faiss GPU indexes, onnxruntime providers, jax backends."""

from __future__ import annotations

from cudalint.finding import Severity
from tests.lint import codes_at, findings

RETRIEVAL = '''\
"""Nearest-neighbour search. Moves the index to the GPU (faiss.StandardGpuResources) if any."""
import logging

import faiss
import numpy as np

log = logging.getLogger(__name__)


def build_index(vectors: np.ndarray, use_gpu: bool = True) -> faiss.Index:
    index = faiss.IndexFlatL2(vectors.shape[1])
    index.add(vectors)
    if use_gpu and faiss.get_num_gpus() > 0:
        res = faiss.StandardGpuResources()
        index = faiss.index_cpu_to_gpu(res, 0, index)
    log.info("built %s on %s", "GpuIndexFlatL2", "the GPU")
    return index


def shard(index):
    return faiss.index_cpu_to_all_gpus(index)
'''


def test_faiss_module(tmp_path):
    found = findings(tmp_path, RETRIEVAL, name="search/index.py", codes=["CUD202"])
    assert codes_at(found) == [("CUD202", 14, 15), ("CUD202", 15, 17), ("CUD202", 21, 12)]
    guarded = [f.guarded for f in sorted(found, key=lambda f: f.location)]
    assert guarded == [True, True, False]
    assert all("faiss-cpu" in f.message for f in found)
    assert found[-1].severity is Severity.ERROR


ONNX = '''\
import onnxruntime as ort

PROVIDERS = ["CUDAExecutionProvider", "CPUExecutionProvider"]


def load(path, device_id=0):
    opts = {"device_id": device_id}
    session = ort.InferenceSession(
        path,
        providers=[("TensorrtExecutionProvider", opts), ("CUDAExecutionProvider", opts)],
    )
    if "CUDAExecutionProvider" not in session.get_providers():
        print("CUDAExecutionProvider unavailable, running on CPU")
        raise RuntimeError("expected CUDAExecutionProvider")
    return session


def describe():
    """Prefers CUDAExecutionProvider, then TensorrtExecutionProvider."""
    return {"CUDAExecutionProvider": "gpu"}
'''


def test_onnxruntime_provider_lists(tmp_path):
    found = findings(tmp_path, ONNX, codes=["CUD202"])
    assert codes_at(found) == [("CUD202", 3, 14), ("CUD202", 10, 21), ("CUD202", 10, 58)]
    assert all(f.severity is Severity.WARNING for f in found)
    assert all("CoreMLExecutionProvider" in f.message for f in found)


def test_provider_guarded_by_availability(tmp_path):
    source = (
        "import onnxruntime as ort\n"
        "if 'CUDAExecutionProvider' in ort.get_available_providers():\n"
        "    providers = ['CUDAExecutionProvider']\n"
        "else:\n"
        "    providers = ['CPUExecutionProvider']\n"
    )
    (found,) = findings(tmp_path, source, codes=["CUD202"])
    assert found.location.row == 3 and found.guarded and found.severity is Severity.INFO


def test_jax_backends(tmp_path):
    source = (
        "import jax\n"
        "gpu = jax.devices('gpu')[0]\n"
        "n = jax.device_count(backend='cuda')\n"
        "cpu = jax.devices('cpu')\n"
        "all_devices = jax.devices()\n"
        "if jax.default_backend() == 'gpu':\n"
        "    print('on gpu')\n"
        "f = jax.jit(step, backend='gpu')\n"
        "g = jax.jit(step)\n"
    )
    found = findings(tmp_path, source, codes=["CUD202"])
    assert codes_at(found) == [("CUD202", 2, 7), ("CUD202", 3, 5), ("CUD202", 8, 5)]


def test_faiss_names_imported_directly(tmp_path):
    source = (
        "from faiss import GpuIndexFlatIP, IndexFlatIP, index_cpu_to_gpu\n"
        "index = GpuIndexFlatIP(res, 128)\n"
        "flat = IndexFlatIP(128)\n"
    )
    found = findings(tmp_path, source, codes=["CUD202"])
    # Reported at the import, which is what fails with faiss-cpu; not again at each call.
    assert codes_at(found) == [("CUD202", 1, 19), ("CUD202", 1, 48)]


def test_other_libraries_are_silent(tmp_path):
    source = (
        "import torch\n"
        "class StandardGpuResources:\n    pass\n"
        "res = StandardGpuResources()\n"
        "x = mylib.index_cpu_to_gpu(index)\n"
        "devices = jax_utils.devices('gpu')\n"
    )
    assert findings(tmp_path, source, codes=["CUD202"]) == []
