"""Regenerate cudalint's operator-coverage table: which ATen ops have an MPS kernel.

    python scripts/gen_mps_ops.py                      # from the installed torch (traces calls)
    python scripts/gen_mps_ops.py --wheel torch-X.whl  # from a wheel (reuses traced calls)
    python scripts/gen_mps_ops.py --check              # exit 1 when the shipped table is stale

The op part comes from torch's own `native_functions.yaml`. The `calls` part maps public Python
calls to the ATen ops they reach; it is made by running each sample invocation below once on
small CPU tensors under a TorchDispatchMode, which sees ops after composite decomposition. Only
the sample invocations are written by hand here, never op names (except ALWAYS_FALLBACK, which
no yaml records). See docs/mps-ops.md.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import re
import sys
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

FORMAT = 1
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "src" / "cudalint" / "data" / "mps_ops"
YAML_IN_PACKAGE = "packaged/ATen/native/native_functions.yaml"
YAML_IN_WHEEL = "torchgen/" + YAML_IN_PACKAGE

# Registered on the MPS key by aten/src/ATen/mps/MPSFallback.mm, not in the yaml: these run on
# the CPU even without PYTORCH_ENABLE_MPS_FALLBACK. Copied from that file by a person: no wheel
# holds it, so the same list goes into every version's table.
ALWAYS_FALLBACK: tuple[str, ...] = (
    "col2im",
    "embedding_renorm_",
    "linalg_svd",
    "linalg_svd.U",
    "upsample_nearest3d.vec",
)

_COMPOSITE_IMPLICIT = {"CompositeImplicitAutograd", "CompositeImplicitAutogradNestedTensor"}
_COMPOSITE_EXPLICIT = {"CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional"}
_FLAG_OF_KEY = {"CPU": "cpu", "CUDA": "cuda", "MPS": "mps"}
_FLAG_ORDER = ("cpu", "cuda", "mps", "implicit", "explicit")


# ---------------------------------------------------------------------------------------------
# Reading native_functions.yaml


@dataclass(frozen=True)
class YamlSource:
    version: str  # torch's version without a local part: "2.13.0"
    text: str
    origin: str  # where it came from, for the table's `source`


def public_version(version: str) -> str:
    return version.split("+", 1)[0]


def installed_source() -> YamlSource:
    """The yaml of the installed torch, found without importing torch."""
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed (no torchgen package)")
    path = Path(next(iter(spec.submodule_search_locations))) / YAML_IN_PACKAGE
    version = importlib.metadata.version("torch")
    return YamlSource(public_version(version), path.read_text(), f"installed torch {version}")


def wheel_source(wheel: Path) -> YamlSource:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        yaml_name = next(n for n in names if n.endswith(YAML_IN_WHEEL))
        meta_name = next(n for n in names if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        text = zf.read(yaml_name).decode()
        metadata = zf.read(meta_name).decode()
    match = re.search(r"^Version: (\S+)$", metadata, re.MULTILINE)
    if match is None:
        raise SystemExit(f"{wheel}: no Version in {meta_name}")
    return YamlSource(public_version(match[1]), text, f"wheel {wheel.name}")


@dataclass(frozen=True)
class OpTable:
    flags: dict[str, str]  # "linalg_eig.out" -> "cpu cuda"
    delegates: dict[str, str]  # structured op -> its structured_delegate
    autogen: dict[str, str]  # generated op -> the entry that generates it
    entries: int


def _dispatch_keys(entry: Mapping[str, Any]) -> set[str]:
    keys: set[str] = set()
    for joined in entry.get("dispatch") or {}:
        keys.update(k.strip() for k in joined.split(","))
    return keys


def _flags(keys: set[str]) -> str:
    found = {_FLAG_OF_KEY[k] for k in keys if k in _FLAG_OF_KEY}
    if keys & _COMPOSITE_IMPLICIT:
        found.add("implicit")
    if keys & _COMPOSITE_EXPLICIT:
        found.add("explicit")
    return " ".join(f for f in _FLAG_ORDER if f in found)


def parse_ops(text: str) -> OpTable:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    entries: list[dict[str, Any]] = yaml.load(text, Loader=loader)
    by_name = {e["func"].split("(", 1)[0]: e for e in entries}
    flags: dict[str, str] = {}
    delegates: dict[str, str] = {}
    autogen: dict[str, str] = {}
    for name, entry in by_name.items():
        keys = _dispatch_keys(entry)
        delegate = entry.get("structured_delegate")
        if delegate:
            delegates[name] = delegate
            keys |= _dispatch_keys(by_name[delegate])  # merge, as the kernels are shared
        elif not entry.get("dispatch"):
            keys.add("CompositeImplicitAutograd")
        flags[name] = _flags(keys)
        for generated in str(entry.get("autogen") or "").split(","):
            if generated.strip():
                autogen[generated.strip()] = name
    return OpTable(flags, delegates, autogen, len(entries))


def totals(ops: OpTable) -> dict[str, int]:
    sets = [set(v.split()) for v in ops.flags.values()]
    return {
        "entries": ops.entries,
        "with_mps": sum("mps" in s for s in sets),
        "composite_without_mps": sum("mps" not in s and bool(s & {"implicit", "explicit"})
                                     for s in sets),
        "cuda_only": sum("cuda" in s and not s & {"mps", "implicit", "explicit"} for s in sets),
        "autogen": len(ops.autogen),
    }


# ---------------------------------------------------------------------------------------------
# Sample invocations: the only hand-written part of the call map.
#
# `call` is evaluated under the recording mode; `setup` runs before it, outside the mode, in a
# namespace holding the tensors made by _namespace(). `grad`: the namespace's float tensors
# require grad and the backward pass is traced too (modules' parameters always do).


ANY = "*"  # a `when` value: the keyword is given with any value but None/False


@dataclass(frozen=True)
class Sample:
    name: str  # qualified name a linter sees: "torch.linalg.eigvals", "torch.Tensor.mode"
    call: str
    setup: str = ""
    grad: bool = False
    method: str | None = None  # attribute name of a Tensor method, matched as `x.NAME(...)`
    when: Mapping[str, object] = field(default_factory=dict)  # keywords the ops depend on
    variant: str = ""  # a condition no keyword shows ("5-D input"): informational only

    @property
    def key(self) -> str:
        key = self.name
        if self.when:
            key += "(" + ", ".join(f"{k}={v!r}" for k, v in self.when.items()) + ")"
        if self.variant:
            key += f"[{self.variant}]"
        return key


Cond = Mapping[str, object] | None


def F(name: str, args: str, grad: bool = False, setup: str = "", when: Cond = None,
      variant: str = "") -> Sample:
    """torch.nn.functional.NAME(args)."""
    return Sample(f"torch.nn.functional.{name}", f"torch.nn.functional.{name}({args})", setup,
                  grad, when=when or {}, variant=variant)


def T(name: str, args: str, grad: bool = False, setup: str = "", when: Cond = None) -> Sample:
    """A function under torch: NAME is "linalg.eig", "fft.rfft", "mode", ..."""
    return Sample(f"torch.{name}", f"torch.{name}({args})", setup, grad, when=when or {})


def Meth(name: str, receiver: str, args: str = "") -> Sample:
    """torch.Tensor.NAME, called as receiver.NAME(args)."""
    return Sample(f"torch.Tensor.{name}", f"{receiver}.{name}({args})", method=name)


def Mod(name: str, ctor: str, args: str, when: Cond = None, variant: str = "",
        grad: bool = True) -> Sample:
    """torch.nn.NAME(ctor), built in setup, then called on args (forward and backward)."""
    return Sample(f"torch.nn.{name}", f"m({args})", f"m = torch.nn.{name}({ctor})", grad,
                  when=when or {}, variant=variant)


def Optim(name: str, when: Cond = None) -> Sample:
    """torch.optim.NAME([p], **when), stepped once."""
    options = "".join(f", {k}={v!r}" for k, v in (when or {}).items())
    setup = f"p = torch.nn.Parameter(torch.randn(4)); p.grad = torch.randn(4)\n" \
            f"opt = torch.optim.{name}([p]{options})"
    return Sample(f"torch.optim.{name}", "opt.step()", setup, when=when or {})


_LU = "LU, piv = torch.linalg.lu_factor(A)"
_LDL = "LD, piv = torch.linalg.ldl_factor(S)"
_POOL = "pooled, pidx = torch.nn.functional.max_pool2d(img, 2, return_indices=True)"
_SPEC = "spec = torch.stft(sig, 8, return_complex=True)"
FUSED = {"fused": True}

SAMPLES: tuple[Sample, ...] = (
    # linear algebra
    T("linalg.eig", "A", grad=True), T("linalg.eigvals", "A"), T("linalg.eigh", "S", grad=True),
    T("linalg.eigvalsh", "S"), T("linalg.svd", "A"), T("linalg.svdvals", "A"),
    T("linalg.solve", "S, B", grad=True), T("linalg.inv", "S", grad=True), T("linalg.det", "S"),
    T("linalg.slogdet", "S"), T("linalg.cholesky", "S"), T("linalg.qr", "A"),
    T("linalg.lstsq", "S, B"), T("linalg.matrix_exp", "A", grad=True),
    T("linalg.matrix_norm", "A"), T("linalg.vector_norm", "v"), T("linalg.norm", "A"),
    T("linalg.pinv", "A"), T("linalg.matrix_rank", "A"), T("linalg.lu", "A"),
    T("linalg.lu_factor", "A"), T("linalg.lu_solve", "LU, piv, B", setup=_LU),
    T("linalg.solve_triangular", "S, B, upper=False"), T("linalg.cross", "v3, v3"),
    T("linalg.multi_dot", "[A, B, A]"), T("linalg.matrix_power", "A, 3"),
    T("linalg.ldl_factor", "S"), T("linalg.ldl_solve", "LD, piv, B", setup=_LDL),
    T("linalg.householder_product", "A, tau"), T("linalg.cond", "S"),
    T("linalg.vecdot", "v, v"), T("linalg.cholesky_ex", "S"), T("linalg.inv_ex", "S"),
    T("linalg.solve_ex", "S, B"), T("linalg.vander", "v"),
    T("svd", "A"), T("pinverse", "A"), T("det", "S"), T("logdet", "S"), T("slogdet", "S"),
    T("inverse", "S"), T("cholesky_solve", "B, S"), T("cholesky_inverse", "S"),
    T("triangular_solve", "B, S"), T("lu_unpack", "LU, piv", setup=_LU), T("geqrf", "A"),
    T("ormqr", "A, tau, B"), T("matrix_exp", "A"), T("qr", "A"), T("lobpcg", "S, k=1"),
    T("mm", "A, B", grad=True), T("bmm", "A3, A3"), T("matmul", "A, B"), T("addmm", "A, A, B"),
    T("baddbmm", "A3, A3, A3"), T("einsum", "'ij,jk->ik', A, B"), T("tensordot", "A, B"),
    T("kron", "A, B"), T("outer", "v, v"), T("trace", "A"), T("cdist", "A, B", grad=True),
    T("pdist", "A", grad=True), T("cov", "A"), T("corrcoef", "A"),
    # reductions, sorting, indexing
    T("mode", "A"), T("median", "A, 0"), T("nanmedian", "A, 0"), T("kthvalue", "A, 2"),
    T("quantile", "A, 0.5"), T("nanquantile", "A, 0.5"), T("topk", "A, 2"), T("sort", "A"),
    T("argsort", "A"), T("unique", "ints"), T("unique_consecutive", "ints"), T("cummax", "A, 0"),
    T("cummin", "A, 0"), T("cumsum", "A, 0"), T("cumprod", "A, 0"), T("logcumsumexp", "A, 0"),
    T("std", "A"), T("var", "A"), T("std_mean", "A"), T("var_mean", "A"), T("aminmax", "A"),
    T("histc", "v"), T("histogram", "v"), T("bincount", "ints"), T("searchsorted", "srt, v"),
    T("bucketize", "v, srt"), T("take", "A, idx"), T("take_along_dim", "A, idx2, 1"),
    T("put", "A, idx, v2"), T("index_select", "A, 0, idx"), T("gather", "A, 1, idx2"),
    T("scatter_reduce", "A, 1, idx2, A, 'amax'"), T("index_add", "A, 0, idx, A2"),
    T("index_reduce", "A, 0, idx, A2, 'prod'"), T("masked_select", "A, A > 0"),
    T("nonzero", "A"), T("segment_reduce", "v, 'sum', lengths=lens"),
    T("renorm", "A, 2, 0, 1.0"), T("diff", "v"), T("tril", "A"), T("diag", "v"),
    T("flip", "A, [0]"), T("roll", "A, 1"), T("rot90", "A"), T("repeat_interleave", "v, 2"),
    T("logsumexp", "A, 0"), T("count_nonzero", "A"),
    # pointwise
    T("heaviside", "A, B"), T("frexp", "A"), T("ldexp", "A, ints4"), T("hypot", "A, B"),
    T("nextafter", "A, B"), T("gcd", "ints, ints"), T("lcm", "ints, ints"),
    T("lerp", "A, B, 0.5"), T("polygamma", "1, P"), T("lgamma", "P"), T("digamma", "P"),
    T("mvlgamma", "P + 2, 2"), T("erfinv", "U"), T("i0", "A"), T("igamma", "P, P"),
    T("igammac", "P, P"), T("logit", "U"), T("xlogy", "P, P"), T("logaddexp", "A, B"),
    T("nan_to_num", "A"), T("signbit", "A"), T("copysign", "A, B"), T("fmod", "A, 2.0"),
    T("remainder", "A, 2.0"), T("clamp", "A, -1, 1"), T("sinc", "A"), T("trunc", "A"),
    T("special.ndtri", "U"), T("special.log_ndtr", "A"), T("special.airy_ai", "A"),
    T("special.bessel_j0", "A"), T("special.bessel_j1", "A"), T("special.bessel_y0", "P"),
    T("special.bessel_y1", "P"), T("special.modified_bessel_i0", "A"),
    T("special.modified_bessel_i1", "A"), T("special.modified_bessel_k0", "P"),
    T("special.modified_bessel_k1", "P"), T("special.scaled_modified_bessel_k0", "P"),
    T("special.scaled_modified_bessel_k1", "P"), T("special.spherical_bessel_j0", "A"),
    T("special.chebyshev_polynomial_t", "A, 3"), T("special.chebyshev_polynomial_u", "A, 3"),
    T("special.hermite_polynomial_h", "A, 3"), T("special.hermite_polynomial_he", "A, 3"),
    T("special.laguerre_polynomial_l", "A, 3"), T("special.legendre_polynomial_p", "A, 3"),
    T("special.zeta", "P + 1, P"), T("special.erfcx", "A"), T("special.i0e", "A"),
    T("special.i1", "A"), T("special.i1e", "A"), T("special.entr", "P"),
    T("special.xlog1py", "P, P"), T("special.gammainc", "P, P"), T("special.gammaln", "P"),
    # random
    T("poisson", "P"), T("binomial", "cnt, U"), T("bernoulli", "U"), T("multinomial", "U, 2"),
    T("normal", "A, 1.0"), T("rand_like", "A"), T("randn_like", "A"), T("randperm", "8"),
    T("randint", "0, 5, (3,)"),
    Sample("torch.distributions.Poisson", "d.sample()", "d = torch.distributions.Poisson(P)"),
    Sample("torch.distributions.Binomial", "d.sample()",
           "d = torch.distributions.Binomial(cnt, U)"),
    Sample("torch.distributions.Gamma", "d.sample()", "d = torch.distributions.Gamma(P, P)"),
    Sample("torch.distributions.Dirichlet", "d.sample()", "d = torch.distributions.Dirichlet(P)"),
    # factories
    T("logspace", "0, 1, 5"), T("linspace", "0, 1, 5"), T("arange", "5"), T("eye", "3"),
    # quantization
    T("quantize_per_tensor", "A, 0.1, 0, torch.quint8"),
    T("quantize_per_channel", "A, scales, zps, 0, torch.quint8"),
    T("fake_quantize_per_tensor_affine", "A, 0.1, 0, 0, 255"),
    T("fake_quantize_per_channel_affine", "A, scales, zps.int(), 0, 0, 255"),
    # fft
    T("fft.fft", "v"), T("fft.ifft", "v"), T("fft.rfft", "v"), T("fft.irfft", "v"),
    T("fft.fft2", "A"), T("fft.rfft2", "A"), T("fft.fftn", "A"), T("fft.fftshift", "v"),
    T("stft", "sig, 8, return_complex=True"), T("istft", "spec, 8", setup=_SPEC),
    # nn.functional
    F("pdist", "A", grad=True), F("pairwise_distance", "A, B"), F("cosine_similarity", "A, B"),
    F("ctc_loss", "lp, tg, il, tl", grad=True), F("multi_margin_loss", "A, cls", grad=True),
    F("multilabel_margin_loss", "A, mlt", grad=True), F("rrelu", "A, training=True", grad=True),
    F("adaptive_max_pool3d", "vol, 2", grad=True), F("adaptive_avg_pool3d", "vol, 2", grad=True),
    F("adaptive_max_pool2d", "img, 2", grad=True), F("adaptive_avg_pool2d", "img, 3", grad=True),
    F("adaptive_max_pool1d", "seq, 3"), F("adaptive_avg_pool1d", "seq, 3"),
    F("fractional_max_pool2d", "img, 2, output_size=3", grad=True),
    F("fractional_max_pool3d", "vol, 2, output_size=2", grad=True),
    F("max_pool1d", "seq, 2"), F("max_pool2d", "img, 2", grad=True), F("max_pool3d", "vol, 2"),
    F("avg_pool1d", "seq, 2"), F("avg_pool2d", "img, 2", grad=True), F("avg_pool3d", "vol, 2"),
    F("lp_pool2d", "img, 2, 2"), F("max_unpool2d", "pooled, pidx, 2", setup=_POOL),
    F("fold", "cols, (4, 4), 2", grad=True), F("unfold", "img, 2", grad=True),
    F("embedding", "idx, A"), F("embedding", "idx, A, max_norm=1.0", when={"max_norm": ANY}),
    F("embedding_bag", "idx, A, offs"), F("one_hot", "idx"),
    F("interpolate", "img, scale_factor=2", grad=True),
    F("interpolate", "vol, scale_factor=2", variant="5-D input"),
    F("interpolate", "img, scale_factor=2, mode='bilinear'", grad=True,
      when={"mode": "bilinear"}),
    F("interpolate", "img, scale_factor=2, mode='bicubic'", grad=True, when={"mode": "bicubic"}),
    F("interpolate", "vol, scale_factor=2, mode='trilinear'", grad=True,
      when={"mode": "trilinear"}),
    F("interpolate", "img, scale_factor=2, mode='bilinear', antialias=True", grad=True,
      when={"mode": "bilinear", "antialias": True}),
    F("grid_sample", "img, grid", grad=True), F("affine_grid", "theta, (1, 3, 4, 4)"),
    F("pixel_shuffle", "img4, 2"), F("pixel_unshuffle", "img, 2"),
    F("channel_shuffle", "img4, 2"),
    F("pad", "img, (1, 1, 1, 1), mode='reflect'", grad=True, when={"mode": "reflect"}),
    F("pad", "img, (1, 1, 1, 1), mode='replicate'", grad=True, when={"mode": "replicate"}),
    F("pad", "img, (1, 1, 1, 1), mode='circular'", when={"mode": "circular"}),
    F("pad", "img, (1, 1, 1, 1)"),
    F("conv1d", "seq, w1", grad=True), F("conv2d", "img, w2", grad=True),
    F("conv3d", "vol, w3", grad=True), F("conv_transpose1d", "seq, w1t", grad=True),
    F("conv_transpose2d", "img, w2t", grad=True), F("conv_transpose3d", "vol, w3t", grad=True),
    F("linear", "A, B", grad=True), F("bilinear", "A, A, wb", grad=True),
    F("layer_norm", "A, (4,)", grad=True), F("group_norm", "img, 1", grad=True),
    F("batch_norm", "img, rm, rv, training=True", grad=True),
    F("instance_norm", "img", grad=True), F("rms_norm", "A, (4,)", grad=True),
    F("local_response_norm", "img, 2"), F("normalize", "A"), F("dropout", "A", grad=True),
    F("dropout2d", "img"), F("alpha_dropout", "A, training=True"),
    F("softmax", "A, 0", grad=True), F("log_softmax", "A, 0", grad=True),
    F("gumbel_softmax", "A"), F("gelu", "A", grad=True), F("silu", "A", grad=True),
    F("relu", "A"), F("leaky_relu", "A"), F("elu", "A"), F("selu", "A"), F("celu", "A"),
    F("hardswish", "A"), F("hardsigmoid", "A"), F("mish", "A"), F("softplus", "A"),
    F("glu", "A", grad=True), F("prelu", "A, wp", grad=True), F("hardtanh", "A"),
    F("logsigmoid", "A"), F("softshrink", "A"), F("tanhshrink", "A"),
    F("cross_entropy", "A, cls", grad=True), F("nll_loss", "A, cls", grad=True),
    F("mse_loss", "A, B", grad=True), F("l1_loss", "A, B"), F("smooth_l1_loss", "A, B"),
    F("huber_loss", "A, B", grad=True), F("kl_div", "A, B"),
    F("binary_cross_entropy", "U, U", grad=True), F("binary_cross_entropy_with_logits", "A, U"),
    F("poisson_nll_loss", "A, P"), F("gaussian_nll_loss", "A, B, P"),
    F("cosine_embedding_loss", "A, B, sgn"), F("margin_ranking_loss", "v, v, sgn"),
    F("hinge_embedding_loss", "A, B"), F("soft_margin_loss", "A, B"),
    F("triplet_margin_loss", "A, B, A"), F("multilabel_soft_margin_loss", "A, U"),
    F("scaled_dot_product_attention", "q, q, q", grad=True),
    # nn modules
    Mod("CTCLoss", "", "lp, tg, il, tl"), Mod("MultiMarginLoss", "", "A, cls"),
    Mod("MultiLabelMarginLoss", "", "A, mlt"), Mod("RReLU", "", "A"),
    Mod("AdaptiveMaxPool3d", "2", "vol"), Mod("AdaptiveAvgPool3d", "2", "vol"),
    Mod("AdaptiveAvgPool2d", "1", "img"), Mod("FractionalMaxPool2d", "2, output_size=3", "img"),
    Mod("FractionalMaxPool3d", "2, output_size=2", "vol"), Mod("Fold", "(4, 4), 2", "cols"),
    Mod("Unfold", "2", "img"), Mod("PairwiseDistance", "", "A, B"),
    Mod("Conv1d", "2, 3, 3", "seq"), Mod("Conv2d", "3, 4, 3", "img"),
    Mod("Conv3d", "2, 2, 3", "vol"), Mod("ConvTranspose2d", "3, 2, 3", "img"),
    Mod("Linear", "4, 3", "A"), Mod("Bilinear", "4, 4, 2", "A, A"),
    Mod("LSTM", "4, 4", "A3"), Mod("GRU", "4, 4", "A3"), Mod("RNN", "4, 4", "A3"),
    Mod("LSTMCell", "4, 4", "A"), Mod("GRUCell", "4, 4", "A"),
    Mod("MultiheadAttention", "4, 2", "A3, A3, A3"),
    Mod("TransformerEncoderLayer", "4, 2, 8, dropout=0.0", "A3"),
    Mod("Embedding", "5, 4", "idx"),
    Mod("Embedding", "5, 4, max_norm=1.0", "idx", when={"max_norm": ANY}),
    Mod("EmbeddingBag", "5, 4", "idx, offs"), Mod("BatchNorm2d", "3", "img"),
    Mod("LayerNorm", "4", "A"), Mod("GroupNorm", "1, 3", "img"), Mod("RMSNorm", "4", "A"),
    Mod("InstanceNorm2d", "3", "img"), Mod("Upsample", "scale_factor=2", "img"),
    # no grad: the CPU kernel standing in for MPSFallback's has no autograd formula
    Mod("Upsample", "scale_factor=2", "vol", variant="5-D input", grad=False),
    Mod("PixelShuffle", "2", "img4"), Mod("ChannelShuffle", "2", "img4"),
    Mod("MaxPool2d", "2", "img"), Mod("AvgPool2d", "2", "img"), Mod("Dropout", "", "A"),
    Mod("GELU", "", "A"), Mod("CrossEntropyLoss", "", "A, cls"),
    # tensor methods
    Meth("mode", "A"), Meth("take", "A", "idx"), Meth("put_", "A.clone()", "idx, v2"),
    Meth("put", "A", "idx, v2"), Meth("heaviside", "A", "B"), Meth("svd", "A"),
    Meth("frexp", "A"), Meth("kthvalue", "A", "2"), Meth("median", "A"), Meth("unique", "ints"),
    Meth("index_reduce_", "A.clone()", "0, idx, A2, 'prod'"), Meth("geqrf", "A"),
    Meth("logit_", "U.clone()"), Meth("cauchy_", "A.clone()"), Meth("exponential_", "A.clone()"),
    Meth("geometric_", "U.clone()", "0.5"), Meth("log_normal_", "A.clone()"),
    Meth("random_", "A.clone()"), Meth("uniform_", "A.clone()"), Meth("normal_", "A.clone()"),
    Meth("dequantize", "qA"), Meth("matrix_exp", "A"), Meth("pinverse", "A"), Meth("det", "S"),
    Meth("std", "A"), Meth("var", "A"), Meth("cumsum", "A", "0"), Meth("sort", "A"),
    Meth("topk", "A", "2"), Meth("nonzero", "A"), Meth("bincount", "ints"),
    # optimizers, init, utils
    Optim("Adagrad"), Optim("Adagrad", FUSED), Optim("Adam"), Optim("Adam", FUSED),
    Optim("AdamW"), Optim("AdamW", FUSED), Optim("SGD"), Optim("SGD", FUSED),
    Optim("RMSprop"), Optim("Adamax"), Optim("NAdam"), Optim("RAdam"), Optim("Adadelta"),
    Optim("ASGD"), Optim("Rprop"),
    Sample("torch.nn.init.orthogonal_", "torch.nn.init.orthogonal_(A.clone())"),
    Sample("torch.nn.init.trunc_normal_", "torch.nn.init.trunc_normal_(A.clone())"),
    Sample("torch.nn.init.kaiming_uniform_", "torch.nn.init.kaiming_uniform_(A.clone())"),
    Sample("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm_([p], 1.0)",
           "p = torch.nn.Parameter(torch.randn(4)); p.grad = torch.randn(4)"),
)

_NAMESPACE_SOURCE = """
A = torch.randn(4, 4); B = torch.randn(4, 4); S = A @ A.T + 4 * torch.eye(4)
A2 = torch.randn(2, 4); A3 = torch.randn(2, 4, 4); v = torch.randn(4); v2 = torch.randn(2)
v3 = torch.randn(3); U = torch.rand(4, 4) * 0.8 + 0.1; P = torch.rand(4, 4) + 0.5
cnt = torch.full((4, 4), 5.0); tau = torch.rand(4); srt = torch.sort(torch.randn(4)).values
ints = torch.tensor([1, 2, 2, 3]); ints4 = torch.randint(0, 4, (4, 4))
idx = torch.tensor([0, 2]); idx2 = torch.tensor([[0], [1], [2], [3]]); offs = torch.tensor([0])
lens = torch.tensor([1, 3]); cls = torch.tensor([0, 1, 2, 3]); sgn = torch.tensor([1.0, -1, 1, -1])
mlt = torch.tensor([[1, -1, 0, 0]] * 4); scales = torch.rand(4) + 0.1
zps = torch.zeros(4, dtype=torch.long); sig = torch.randn(32)
lp = torch.randn(5, 2, 3).log_softmax(2); tg = torch.tensor([[1, 2], [1, 1]])
il = torch.tensor([5, 5]); tl = torch.tensor([2, 2])
img = torch.randn(1, 3, 8, 8); img4 = torch.randn(1, 4, 4, 4); vol = torch.randn(1, 2, 4, 4, 4)
seq = torch.randn(2, 2, 8); cols = torch.randn(1, 12, 9); q = torch.randn(1, 2, 4, 8)
w1 = torch.randn(3, 2, 3); w2 = torch.randn(4, 3, 3, 3); w3 = torch.randn(2, 2, 3, 3, 3)
w1t = torch.randn(2, 3, 3); w2t = torch.randn(3, 2, 3, 3); w3t = torch.randn(2, 2, 3, 3, 3)
wb = torch.randn(2, 4, 4); wp = torch.tensor([0.25]); rm = torch.zeros(3); rv = torch.ones(3)
grid = torch.rand(1, 4, 4, 2) * 2 - 1; theta = torch.randn(1, 2, 3)
qA = torch.quantize_per_tensor(A, 0.1, 0, torch.quint8)
"""
_NO_GRAD = {"rm", "rv"}  # batch_norm's running stats


def _namespace(torch: Any, grad: bool) -> dict[str, Any]:
    torch.manual_seed(0)
    namespace: dict[str, Any] = {"torch": torch}
    exec(_NAMESPACE_SOURCE, namespace)
    if grad:
        for name, value in namespace.items():
            if name not in _NO_GRAD and isinstance(value, torch.Tensor) \
                    and value.is_floating_point():
                value.requires_grad_()
    return namespace


def op_name(func: Any) -> str | None:
    """'linalg_eig' for aten.linalg_eig.default, 'mode.values' for aten.mode.values."""
    namespace, base = func._schema.name.split("::", 1)
    if namespace != "aten":
        return None
    overload = func._overloadname
    return base if overload == "default" else f"{base}.{overload}"


def _family(op: str) -> str:
    """'put' for put_, put and put.out: an op's overloads and its in-place form."""
    return op.split(".", 1)[0].rstrip("_")


def _make_recorder(torch: Any, flags: Mapping[str, str]) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    explicit_keys = (torch._C.DispatchKey.CompositeExplicitAutograd,
                     torch._C.DispatchKey.CompositeExplicitAutogradNonFunctional)

    class Recorder(TorchDispatchMode):  # type: ignore[misc]
        """Records the ATen ops reached, after composite-implicit decomposition.

        An op without an MPS kernel but with a composite-explicit one runs that kernel on MPS:
        it is run here too, to record what it calls. Only calls to overloads of the same op are
        kept (`linalg_lstsq` -> `linalg_lstsq.out`, `put` -> `put_`): other callees of such
        kernels can depend on the device (`_convolution` picks a CPU-only path here).
        """

        def __init__(self) -> None:
            super().__init__()
            self.ops: list[str] = []
            self._stack: list[str] = []

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            name = op_name(func)
            if name is None or (self._stack and _family(name) != _family(self._stack[-1])):
                return func(*args, **kwargs)
            self.ops.append(name)
            key = self._explicit_key(func, name)
            if key is None or name in self._stack:
                return func(*args, **kwargs)
            self._stack.append(name)
            try:
                with self:
                    return func._op_dk(key, *args, **kwargs)
            except Exception:
                # Wrapped numbers reach the mode as Python scalars, which a `.Tensor` overload
                # called from the kernel refuses; what was reached is recorded already.
                return func(*args, **kwargs)
            finally:
                self._stack.pop()

        def _explicit_key(self, func: Any, name: str) -> Any:
            op_flags = flags.get(name, "").split()
            if "explicit" not in op_flags or "mps" in op_flags:
                return None
            has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
            return next((k for k in explicit_keys if has_kernel(func.name(), k)), None)

    return Recorder


@contextmanager
def _fallback_ops_visible(torch: Any, flags: Mapping[str, str]) -> Iterator[None]:
    """Give the composite ALWAYS_FALLBACK ops a CPU kernel, as MPSFallback.mm does for MPS.

    A composite-implicit op decomposes before a dispatch mode sees it; with a backend kernel
    it no longer does, so the recorder sees `linalg_svd` where MPS would intercept it.
    """
    lib = torch.library.Library("aten", "IMPL")
    for op in ALWAYS_FALLBACK:
        if "implicit" not in flags.get(op, "").split():
            continue
        base, _, overload = op.partition(".")
        overload_packet = getattr(torch.ops.aten, base)
        overload_op = getattr(overload_packet, overload or "default")
        lib.impl(op, _decomposing_kernel(overload_op), "CPU")
    try:
        yield
    finally:
        lib._destroy()


def _decomposing_kernel(overload_op: Any) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        return overload_op.decompose(*args, **kwargs)

    return kernel


@dataclass
class TracedCall:
    sample: Sample
    ops: list[str]
    backward: list[str]


def _outputs(torch: Any, value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _outputs(torch, item)]
    return []


def _trace_one(torch: Any, recorder: Any, sample: Sample) -> TracedCall:
    namespace = _namespace(torch, sample.grad)
    exec(sample.setup, namespace)
    forward = recorder()
    with forward:
        result = eval(sample.call, namespace)
    needing_grad = [t for t in _outputs(torch, result) if t.requires_grad]
    backward = recorder()
    if needing_grad:
        loss = sum((t.abs() if t.is_complex() else t).float().sum() for t in needing_grad)
        with backward:
            loss.backward()
    return TracedCall(sample, forward.ops, backward.ops)


def trace_samples(flags: Mapping[str, str],
                  samples: Sequence[Sample] = SAMPLES) -> tuple[list[TracedCall], list[str]]:
    """Run each sample on CPU under the recorder. Returns the traces and the failures."""
    import warnings

    import torch

    recorder = _make_recorder(torch, flags)
    traced: list[TracedCall] = []
    failures: list[str] = []
    with _fallback_ops_visible(torch, flags), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sample in samples:
            try:
                traced.append(_trace_one(torch, recorder, sample))
            except Exception as exc:  # a sample the installed torch can't run
                failures.append(f"{sample.key}: {type(exc).__name__}: {exc}")
    return traced, failures


# ---------------------------------------------------------------------------------------------
# The table


def _on_device_path(op: str, ops: OpTable) -> bool:
    """False for ops only a CPU run reaches (`_scaled_dot_product_flash_attention_for_cpu`).

    Composite kernels pick callees by device; an op with neither a CUDA, an MPS nor a
    composite kernel is not what a CUDA program reaches, nor what MPS would.
    """
    if op in ALWAYS_FALLBACK:
        return True
    flags = ops.flags.get(ops.autogen.get(op, op))
    return flags is None or bool(set(flags.split()) - {"cpu"})


def call_entries(traced: Sequence[TracedCall], ops: OpTable) -> dict[str, dict[str, Any]]:
    calls: dict[str, dict[str, Any]] = {}
    for trace in traced:
        sample = trace.sample
        entry: dict[str, Any] = {
            "name": sample.name,
            "ops": sorted({o for o in trace.ops if _on_device_path(o, ops)}),
        }
        backward = sorted({o for o in trace.backward if _on_device_path(o, ops)})
        if backward:
            entry["backward"] = backward
        if sample.method:
            entry["method"] = sample.method
        if sample.when:
            entry["when"] = dict(sample.when)
        if sample.variant:
            entry["variant"] = sample.variant
        calls[sample.key] = entry
    return calls


def build_table(source: YamlSource, ops: OpTable, calls: Mapping[str, Any],
                calls_method: str) -> dict[str, Any]:
    return {
        "always_fallback": sorted(ALWAYS_FALLBACK),
        "autogen": ops.autogen,
        "calls": calls,
        "calls_method": calls_method,
        "delegates": ops.delegates,
        "format": FORMAT,
        "generator": "scripts/gen_mps_ops.py",
        "ops": ops.flags,
        "source": f"native_functions.yaml of {source.origin}",
        "torch": source.version,
        "totals": totals(ops),
    }


def render(table: Mapping[str, Any]) -> str:
    return json.dumps(table, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


def table_path(out_dir: Path, version: str) -> Path:
    return out_dir / f"torch-{version}.json"


def _version_key(path: Path) -> tuple[int, ...]:
    numbers = re.findall(r"\d+", path.stem.removeprefix("torch-"))
    return tuple(int(n) for n in numbers)


def traced_calls_from(out_dir: Path, path: Path | None) -> tuple[dict[str, Any], str]:
    """The calls of a table made by tracing: `path`, or the newest traced one in out_dir."""
    candidates = [path] if path else sorted(out_dir.glob("torch-*.json"), key=_version_key,
                                            reverse=True)
    for candidate in candidates:
        table = json.loads(candidate.read_text())
        if table["calls_method"].startswith("traced"):
            return table["calls"], f"reused from {candidate.name} ({table['calls_method']})"
    raise SystemExit(f"no table made by tracing in {out_dir}: run without --wheel first")


def generate(source: YamlSource, out_dir: Path, wheel: bool,
             calls_from: Path | None = None) -> tuple[dict[str, Any], list[str]]:
    """The table for `source`, and the samples that failed (tracing the installed torch)."""
    ops = parse_ops(source.text)
    if wheel:
        calls, method = traced_calls_from(out_dir, calls_from)
        return build_table(source, ops, calls, method), []
    traced, failures = trace_samples(ops.flags)
    method = (f"traced: {len(traced)} sample calls run on CPU under TorchDispatchMode "
              f"with torch {source.version}")
    return build_table(source, ops, call_entries(traced, ops), method), failures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--wheel", type=Path, help="read a torch wheel instead of the installed")
    parser.add_argument("--calls-from", type=Path,
                        help="with --wheel: the traced table whose calls to reuse")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true", help="exit 1 if the table would change")
    args = parser.parse_args(argv)
    source = wheel_source(args.wheel) if args.wheel else installed_source()
    table, failures = generate(source, args.out, bool(args.wheel), args.calls_from)
    for failure in failures:
        print(f"sample failed: {failure}", file=sys.stderr)
    path = table_path(args.out, source.version)
    text = render(table)
    if args.check:
        current = path.read_text() if path.exists() else ""
        print(f"{path}: {'up to date' if current == text else 'STALE'}")
        return int(current != text)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path} ({len(text) // 1024} KiB): {table['totals']}")
    return 1 if failures else 0


if __name__ == "__main__":
    with suppress(BrokenPipeError):
        raise SystemExit(main())
