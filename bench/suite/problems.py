# ===- bench/suite/problems.py - The suite's problems and PyTorch twins ----===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# One entry per benchmark problem: its set, its MLIR file, its inputs (name,
# shape, element type and how to draw them) in the order of the MLIR
# function's arguments, its outputs, and its PyTorch twin: a function taking
# the inputs as tensors, in the same order, and computing the same thing the
# way a PyTorch model writes it (KernelBench style).
#
# Two sets: "small" (this file: the first suite, tensors of 64 MB at most,
# and the bundled examples) and "real" (problems_real.py: KernelBench's
# level-1 and level-2 problems at KernelBench's sizes).
#
# The table needs no torch: `run_suite.py --dry-run` checks it against the
# MLIR signatures on machines without torch. The twins use the module-level
# names `torch`, `F` and `math`; `load_torch()` binds the first two.
#
# ===----------------------------------------------------------------------===#

import hashlib
import inspect
import math
import sys

import problems_real

torch = None
F = None


def load_torch():
    """Imports torch and torch.nn.functional into this module's globals."""
    global torch, F
    import torch as _torch
    import torch.nn.functional as _functional
    torch = _torch
    F = _functional
    problems_real.torch = _torch
    problems_real.F = _functional
    return torch


def _rms_norm(x, w, eps):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, eps)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


# --- the PyTorch twins ---------------------------------------------------

def t_softmax(x):
    return torch.softmax(x, dim=-1)


def t_layernorm(x, gamma, beta):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, 1e-5)


def t_rmsnorm(x, w):
    return _rms_norm(x, w, 1e-6)


def t_gelu_erf(x):
    return F.gelu(x)


def t_new_gelu(x):
    # KernelBench level 1, MinGPTNewGelu, verbatim.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * torch.pow(x, 3.0))))


def t_row_sum(x):
    return torch.sum(x, dim=-1)


def t_row_mean(x):
    return torch.mean(x, dim=-1)


def t_row_max(x):
    return torch.amax(x, dim=-1)


def t_logsumexp(x):
    return torch.logsumexp(x, dim=-1)


def t_l2norm(x):
    return x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)


def t_matmul(a, b):
    return torch.matmul(a, b)


# nn.Linear computes addmm(bias, x, weight.t()); the weights here are
# stored [in, out] as the MLIR's matmul reads them, so addmm(b, x, w).
def t_gemm_bias_relu(x, w, b):
    return torch.relu(torch.addmm(b, x, w))


def t_gemm_bias_gelu(x, w, b):
    return F.gelu(torch.addmm(b, x, w), approximate="tanh")


def t_gemm_bias_silu_scale(x, w, b):
    # KernelBench level 2, Matmul_Swish_Scaling.
    h = torch.addmm(b, x, w)
    h = h * torch.sigmoid(h)
    return h * 2.0


def t_gemm_scale_residual(x, w, b, res):
    return torch.addmm(b, x, w) * 0.5 + res


def t_gemm_residual_layernorm(x, w, b, res, gamma, beta):
    return F.layer_norm(torch.addmm(b, x, w) + res, (w.shape[1],), gamma, beta, 1e-5)


def t_attention_scores_softmax(q, kt, mask):
    return torch.softmax(torch.bmm(q, kt) * 0.125 + mask, dim=-1)


def t_scale_mask_softmax(x, mask):
    return torch.softmax(x * 0.125 + mask, dim=-1)


def t_conv_bias_relu(x, w, b):
    return torch.relu(F.conv2d(x, w, b))


def t_conv_bias_relu_maxpool(x, w, b):
    return F.max_pool2d(torch.relu(F.conv2d(x, w, b)), 2)


def t_layernorm_gelu(x, gamma, beta):
    return F.gelu(F.layer_norm(x, (x.shape[-1],), gamma, beta, 1e-5))


def t_rmsnorm_silu(x, w):
    return F.silu(_rms_norm(x, w, 1e-6))


def t_residual_layernorm(x, res, gamma, beta):
    return F.layer_norm(x + res, (x.shape[-1],), gamma, beta, 1e-5)


def t_residual_rmsnorm(x, res, w):
    return _rms_norm(x + res, w, 1e-6)


def t_swiglu(gate, up):
    return F.silu(gate) * up


def t_bias_gelu_residual(x, b, res):
    return F.gelu(x + b, approximate="tanh") + res


# examples/*.mlir
def t_ex_attention_block(q, kt, v):
    return torch.bmm(torch.softmax(torch.bmm(q, kt) * 0.125, dim=-1), v)


def t_ex_mlp_block(x, w1, b1, w2, b2):
    return torch.addmm(b2, F.gelu(torch.addmm(b1, x, w1), approximate="tanh"), w2)


def t_ex_tosa_mlp(x, w, b):
    ex = torch.exp(torch.sigmoid(torch.bmm(x, w) + b))
    return ex * torch.reciprocal(ex.sum(dim=-1, keepdim=True))


# --- the table -----------------------------------------------------------
#
# An input is (name, shape, dtype, init). init: "normal" (standard normal),
# "normal:S" (standard deviation S, e.g. 1/sqrt(fan_in) for weights),
# "uniform:LO:HI", "causal_mask" (0 on and below the diagonal, -10000
# above). Outputs are (shape, dtype).

R, H = 8192, 2048


def _w(k):
    return "normal:%.6g" % (1.0 / math.sqrt(k))


def _p(kind, mlir, inputs, outputs, twin, desc):
    return {"kind": kind, "set": "small", "mlir": mlir, "inputs": inputs, "outputs": outputs,
            "twin": twin, "desc": desc}


def _suite(name, kind, inputs, outputs, desc, twin=None):
    return name, _p(kind, "bench/suite/%s.mlir" % name, inputs, outputs,
                    twin or "t_" + name, desc)


X = ("x", [R, H], "f32", "normal")
GAMMA = ("gamma", [H], "f32", "uniform:0.5:1.5")
BETA = ("beta", [H], "f32", "normal:0.1")
RMS_W = ("w", [H], "f32", "uniform:0.5:1.5")
RES = ("res", [R, H], "f32", "normal")
OUT = [([R, H], "f32")]

PROBLEMS = dict([
    # single ops
    _suite("softmax", "single", [X], OUT, "softmax, linalg.softmax"),
    _suite("softmax_decomposed", "single", [("x", [16384, 1024], "f32", "normal")],
           [([16384, 1024], "f32")], "softmax as max/sub/exp/sum/div generics",
           twin="t_softmax"),
    _suite("layernorm", "single", [X, GAMMA, BETA], OUT, "LayerNorm"),
    _suite("rmsnorm", "single", [X, RMS_W], OUT, "RMSNorm"),
    _suite("gelu_erf", "single", [X], OUT, "GELU (erf), one op"),
    _suite("new_gelu", "single", [X], OUT, "GELU (tanh) op by op, MinGPTNewGelu"),
    _suite("row_sum", "single", [("x", [16384, 1024], "f32", "normal")],
           [([16384], "f32")], "sum over rows"),
    _suite("row_mean", "single", [X], [([R], "f32")], "mean over rows"),
    _suite("row_max", "single", [X], [([R], "f32")], "max over rows"),
    _suite("logsumexp", "single", [X], [([R], "f32")], "logsumexp over rows"),
    _suite("l2norm", "single", [X], OUT, "x / norm2(x) per row"),
    _suite("matmul", "single", [("a", [4096, 2048], "f32", "normal"),
                                ("b", [2048, 4096], "f32", _w(2048))],
           [([4096, 4096], "f32")], "GEMM 4096x2048x4096"),
    # fused chains
    _suite("gemm_bias_relu", "fused", [("x", [4096, 2048], "f32", "normal"),
                                       ("w", [2048, 4096], "f32", _w(2048)),
                                       ("b", [4096], "f32", "normal:0.1")],
           [([4096, 4096], "f32")], "relu(x @ w + b)"),
    _suite("gemm_bias_gelu", "fused", [("x", [4096, 1024], "f32", "normal"),
                                       ("w", [1024, 4096], "f32", _w(1024)),
                                       ("b", [4096], "f32", "normal:0.1")],
           [([4096, 4096], "f32")], "gelu_tanh(x @ w + b)"),
    _suite("gemm_bias_silu_scale", "fused", [("x", [4096, 1024], "f32", "normal"),
                                             ("w", [1024, 4096], "f32", _w(1024)),
                                             ("b", [4096], "f32", "normal:0.1")],
           [([4096, 4096], "f32")], "silu(x @ w + b) * 2"),
    _suite("gemm_scale_residual", "fused", [("x", [4096, 2048], "f32", "normal"),
                                            ("w", [2048, 2048], "f32", _w(2048)),
                                            ("b", [2048], "f32", "normal:0.1"),
                                            ("res", [4096, 2048], "f32", "normal")],
           [([4096, 2048], "f32")], "(x @ w + b) * 0.5 + res"),
    _suite("gemm_residual_layernorm", "fused",
           [("x", [4096, 1024], "f32", "normal"), ("w", [1024, 1024], "f32", _w(1024)),
            ("b", [1024], "f32", "normal:0.1"), ("res", [4096, 1024], "f32", "normal"),
            ("gamma", [1024], "f32", "uniform:0.5:1.5"), ("beta", [1024], "f32", "normal:0.1")],
           [([4096, 1024], "f32")], "layer_norm(x @ w + b + res)"),
    _suite("attention_scores_softmax", "fused",
           [("q", [64, 512, 64], "f32", "normal"), ("kt", [64, 64, 512], "f32", "normal"),
            ("mask", [512, 512], "f32", "causal_mask")],
           [([64, 512, 512], "f32")], "softmax(q @ kt / 8 + mask)"),
    _suite("scale_mask_softmax", "fused",
           [("x", [16, 1024, 1024], "f32", "normal:4"),
            ("mask", [1024, 1024], "f32", "causal_mask")],
           [([16, 1024, 1024], "f32")], "softmax(x / 8 + mask)"),
    _suite("conv_bias_relu", "fused",
           [("x", [16, 32, 130, 130], "f32", "normal"),
            ("w", [64, 32, 3, 3], "f32", _w(32 * 9)), ("b", [64], "f32", "normal:0.1")],
           [([16, 64, 128, 128], "f32")], "relu(conv3x3(x) + b)"),
    _suite("conv_bias_relu_maxpool", "fused",
           [("x", [16, 64, 66, 66], "f32", "normal"),
            ("w", [128, 64, 3, 3], "f32", _w(64 * 9)), ("b", [128], "f32", "normal:0.1")],
           [([16, 128, 32, 32], "f32")], "maxpool2(relu(conv3x3(x) + b))"),
    _suite("layernorm_gelu", "fused", [X, GAMMA, BETA], OUT, "gelu(layer_norm(x))"),
    _suite("rmsnorm_silu", "fused", [X, RMS_W], OUT, "silu(rms_norm(x))"),
    _suite("residual_layernorm", "fused", [X, RES, GAMMA, BETA], OUT,
           "layer_norm(x + res)"),
    _suite("residual_rmsnorm", "fused", [X, RES, RMS_W], OUT, "rms_norm(x + res)"),
    _suite("swiglu", "fused", [("gate", [4096, 4096], "f32", "normal"),
                               ("up", [4096, 4096], "f32", "normal")],
           [([4096, 4096], "f32")], "silu(gate) * up"),
    _suite("bias_gelu_residual", "fused", [("x", [R, H], "f32", "normal"),
                                           ("b", [H], "f32", "normal:0.1"), RES],
           OUT, "gelu_tanh(x + b) + res"),
    # the bundled examples
    ("ex_attention_block", _p(
        "example", "examples/attention_block.mlir",
        [("q", [8, 512, 64], "f32", "normal"), ("kt", [8, 64, 512], "f32", "normal"),
         ("v", [8, 512, 64], "f32", "normal")],
        [([8, 512, 64], "f32")], "t_ex_attention_block", "softmax(q @ kt / 8) @ v")),
    ("ex_conv_block", _p(
        "example", "examples/conv_block.mlir",
        [("x", [16, 64, 58, 58], "f32", "normal"),
         ("w", [128, 64, 3, 3], "f32", _w(64 * 9)), ("b", [128], "f32", "normal:0.1")],
        [([16, 128, 28, 28], "f32")], "t_conv_bias_relu_maxpool",
        "maxpool2(relu(conv3x3(x) + b))")),
    ("ex_layernorm_gelu", _p(
        "example", "examples/layernorm_gelu.mlir",
        [("x", [4096, 1024], "f32", "normal"), ("gamma", [1024], "f32", "uniform:0.5:1.5"),
         ("beta", [1024], "f32", "normal:0.1")],
        [([4096, 1024], "f32")], "t_layernorm_gelu", "gelu(layer_norm(x))")),
    ("ex_mlp_block", _p(
        "example", "examples/mlp_block.mlir",
        [("x", [512, 1024], "f32", "normal"), ("w1", [1024, 4096], "f32", _w(1024)),
         ("b1", [4096], "f32", "normal:0.1"), ("w2", [4096, 1024], "f32", _w(4096)),
         ("b2", [1024], "f32", "normal:0.1")],
        [([512, 1024], "f32")], "t_ex_mlp_block", "gelu_tanh(x @ w1 + b1) @ w2 + b2")),
    ("ex_tosa_mlp", _p(
        "example", "examples/tosa_mlp.mlir",
        [("x", [1, 256, 512], "f32", "normal"), ("w", [1, 512, 1024], "f32", _w(512)),
         ("b", [1, 1, 1024], "f32", "normal:0.1")],
        [([1, 256, 1024], "f32")], "t_ex_tosa_mlp",
        "e = exp(sigmoid(x @ w + b)); e / sum(e)  (TOSA)")),
])


SMALL = dict(PROBLEMS)
PROBLEMS.update(problems_real.PROBLEMS)
SETS = {"small": list(SMALL), "real": list(problems_real.PROBLEMS)}


def twin(name):
    """The PyTorch twin of problem `name`, or None (call load_torch()
    before calling it)."""
    spec = PROBLEMS[name]
    module = problems_real if spec["set"] == "real" else sys.modules[__name__]
    return getattr(module, spec["twin"], None)


def twin_hash(name):
    """A digest of the twin's source and the problem's signature: what an
    exported MLIR file depends on. bench/suite/export_real.py writes it into
    each file it exports; `run_suite.py --dry-run` recomputes it, so a twin
    or signature changed without a new export is caught without torch."""
    spec = PROBLEMS[name]
    text = inspect.getsource(twin(name)) + repr(
        [(n, s, t) for n, s, t, _ in spec["inputs"]]) + repr(spec["outputs"])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def tensor_bytes(shape, dtype):
    return math.prod(shape) * {"f32": 4, "f16": 2, "bf16": 2, "f64": 8}[dtype]


def compulsory_bytes(spec):
    """Each input read once and each output written once."""
    return (sum(tensor_bytes(s, t) for _, s, t, _ in spec["inputs"]) +
            sum(tensor_bytes(s, t) for s, t in spec["outputs"]))


def make_input(spec, generator, device):
    """Draws one input tensor per its table entry, from `generator`."""
    name, shape, dtype, init = spec
    assert dtype == "f32", "the suite is fp32"
    kind, _, arg = init.partition(":")
    if kind == "normal":
        t = torch.randn(shape, generator=generator, device=device)
        return t * float(arg) if arg else t
    if kind == "uniform":
        lo, hi = (float(v) for v in arg.split(":"))
        return torch.rand(shape, generator=generator, device=device) * (hi - lo) + lo
    if kind == "causal_mask":
        n = shape[-1]
        keep = torch.ones(shape[-2], n, device=device, dtype=torch.bool).tril()
        return torch.zeros(shape, device=device).masked_fill(~keep, -10000.0)
    raise ValueError("unknown init %r for input %s" % (init, name))
