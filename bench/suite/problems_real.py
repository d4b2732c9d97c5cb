# ===- bench/suite/problems_real.py - The real-sized problems and twins ---===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# The "real" set of the benchmark suite: KernelBench's level-1 single ops
# and level-2 fusions at KernelBench's own sizes (scaled down only where a
# problem's tensors would not fit the GPU four times over), with tensors of
# 64 MB to 2 GB. The table has the same form as problems.py's (which merges
# it); each twin is written as the KernelBench model writes it
# (`F.linear` with an [out, in] weight as nn.Linear does, `torch.max(x,
# dim)[0]`, ...), weights passed as arguments.
#
# bench/suite/export_real.py exports every twin with the torch-mlir FX
# importer to bench/suite/real/NAME.mlir, so each MLIR file is what the
# importer writes for the twin; the one exception is l1_matmul_bt_maps, the
# same GEMM written with `indexing_maps`, which bench/suite/gen_suite.py
# writes (no importer emits it yet; other front ends do).
#
# The twins use the module-level names `torch` and `F`; problems.py's
# `load_torch()` binds them.
#
# ===----------------------------------------------------------------------===#

import math

torch = None
F = None

# --- level 1: single ops --------------------------------------------------


def t_matmul(a, b):
    # KernelBench level 1, 2_Standard_matrix_multiplication.
    return torch.matmul(a, b)


def t_matmul_bt(a, b):
    # KernelBench level 1, 17_Matmul_with_transposed_B: b is [N, K].
    return torch.matmul(a, b.T)


def t_bmm(a, b):
    # KernelBench level 1, 3_Batched_matrix_multiplication.
    return torch.bmm(a, b)


def t_softmax(x):
    # KernelBench level 1, 23_Softmax.
    return torch.softmax(x, dim=1)


def t_layernorm(x, w, b):
    # KernelBench level 1, 40_LayerNorm: nn.LayerNorm((64, 256, 256)).
    return F.layer_norm(x, tuple(x.shape[1:]), w, b, 1e-5)


def t_rmsnorm_channels(x):
    # KernelBench level 1, 36_RMSNorm_, verbatim: over dim 1 of NCHW.
    rms = torch.sqrt(torch.mean(x**2, dim=1, keepdim=True) + 1e-5)
    return x / rms


def t_groupnorm(x, w, b):
    # KernelBench level 1, 35_GroupNorm_: nn.GroupNorm(8, 64).
    return F.group_norm(x, 8, w, b, 1e-5)


def t_sum_dim1(x):
    # KernelBench level 1, 47_Sum_reduction_over_a_dimension.
    return torch.sum(x, dim=1, keepdim=True)


def t_mean_dim1(x):
    # KernelBench level 1, 48_Mean_reduction_over_a_dimension.
    return torch.mean(x, dim=1)


def t_max_dim1(x):
    # KernelBench level 1, 49_Max_reduction_over_a_dimension: the values of
    # torch.max, whose indices the importer computes and drops.
    return torch.max(x, dim=1)[0]


def t_sum_last(x):
    return torch.sum(x, dim=-1)


def t_mean_last(x):
    return torch.mean(x, dim=-1)


def t_amax_last(x):
    return torch.amax(x, dim=-1)


def t_new_gelu(x):
    # KernelBench level 1, 88_MinGPTNewGelu, verbatim.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * torch.pow(x, 3.0))))


def t_relu(x):
    return torch.relu(x)


def t_sigmoid(x):
    return torch.sigmoid(x)


def t_tanh(x):
    return torch.tanh(x)


def t_maxpool2d(x):
    # KernelBench level 1, 42_Max_Pooling_2D: kernel 4, stride 1, padding 1.
    return F.max_pool2d(x, kernel_size=4, stride=1, padding=1, dilation=1)


def t_conv2d(x, w, b):
    # KernelBench level 1, 50_conv_standard_2D: AlexNet's first layer.
    return F.conv2d(x, w, b, stride=4, padding=2)


# --- level 2: fusions ------------------------------------------------------


def t_gemm_bias_relu(x, w, b):
    # KernelBench level 2, 76_Gemm_Add_ReLU: a bias-free Linear, then a bias.
    return torch.relu(F.linear(x, w) + b)


def t_gemm_div_gelu(x, w, b):
    # KernelBench level 2, 86_Matmul_Divide_GELU.
    return F.gelu(F.linear(x, w, b) / 10.0)


def t_gemm_scale_residual(x, w, b):
    # KernelBench level 2, 40_Matmul_Scaling_ResidualAdd: the residual is
    # the GEMM's own output (`x.clone().detach()` in the original).
    h = F.linear(x, w, b)
    return h * 0.5 + h


def t_gemm_softmax(x, w, b):
    # KernelBench level 2, 66_Matmul_Dropout_Softmax, in eval mode (the
    # dropout is the identity).
    return torch.softmax(F.linear(x, w, b), dim=1)


def t_gemm_sigmoid_gemm_lse(x, w1, b1, w2, b2):
    # KernelBench level 2, 45_Gemm_Sigmoid_LogSumExp.
    h = torch.sigmoid(F.linear(x, w1, b1))
    return torch.logsumexp(F.linear(h, w2, b2), dim=1)


def t_gemm_layernorm(x, w, b, gamma, beta):
    return F.layer_norm(F.linear(x, w, b), (w.shape[0],), gamma, beta, 1e-5)


def t_gemm_groupnorm_hardtanh(x, w, b, gamma, beta):
    # KernelBench level 2, 30_Gemm_GroupNorm_Hardtanh, with the group norm
    # written out over a [rows, groups, 512] view: the importer lowers
    # F.group_norm through index tables of rows x channels i64 (64 MB here).
    h = F.linear(x, w, b)
    g = h.reshape(h.shape[0], 16, -1)
    mean = g.mean(dim=-1, keepdim=True)
    var = g.var(dim=-1, unbiased=False, keepdim=True)
    h = ((g - mean) * torch.rsqrt(var + 1e-5)).reshape(h.shape) * gamma + beta
    return F.hardtanh(h, -2.0, 2.0)


def t_conv_relu_bias(x, w, b, bias):
    # KernelBench level 2, 1_Conv2D_ReLU_BiasAdd.
    return torch.relu(F.conv2d(x, w, b)) + bias


def t_conv_relu_maxpool(x, w, b):
    # A VGG block: 3x3 convolution (padding 1), bias, ReLU, 2x2 max-pool.
    return F.max_pool2d(torch.relu(F.conv2d(x, w, b, padding=1)), 2)


def t_attention(q, k, v):
    # Scaled dot-product attention as models write it out.
    s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    return torch.matmul(torch.softmax(s, dim=-1), v)


# --- the table ---------------------------------------------------------------


def _w(k):
    return "normal:%.6g" % (1.0 / math.sqrt(k))


def _p(name, kind, inputs, outputs, desc, twin=None):
    short = name.split("_", 1)[1]
    return name, {"kind": kind, "set": "real", "mlir": "bench/suite/real/%s.mlir" % name,
                  "inputs": inputs, "outputs": outputs, "twin": twin or "t_" + short,
                  "desc": desc}


def _x(shape, init="normal"):
    return ("x", list(shape), "f32", init)


def _linear(m, k, n):
    """x [m, k], an nn.Linear weight [n, k] and its bias [n]."""
    return [_x([m, k]), ("w", [n, k], "f32", _w(k)), ("b", [n], "f32", "normal:0.1")]


ROWS = [512, 393216]      # KernelBench's row length, 512 of its 4096 rows
NCHW = [8, 64, 512, 512]  # KernelBench's 36/35 with batch 8 (of 112)
RED = [16, 4096, 4095]    # KernelBench's 47-49 with batch 16 (of 128)
AFFINE = [64, 256, 256]
QKV = [16, 16, 1024, 64]

PROBLEMS = dict([
    _p("l1_matmul", "single", [("a", [1024, 8192], "f32", "normal"),
                               ("b", [8192, 8192], "f32", _w(8192))],
       [([1024, 8192], "f32")], "GEMM 1024x8192x8192, B row-major"),
    _p("l1_matmul_bt", "single", [("a", [1024, 8192], "f32", "normal"),
                                  ("b", [8192, 8192], "f32", _w(8192))],
       [([1024, 8192], "f32")], "GEMM a @ b.T, b [N, K] (linalg.transpose + matmul)"),
    ("l1_matmul_bt_maps", {
        "kind": "single", "set": "real", "mlir": "bench/suite/real/l1_matmul_bt_maps.mlir",
        "inputs": [("a", [1024, 8192], "f32", "normal"),
                   ("b", [8192, 8192], "f32", _w(8192))],
        "outputs": [([1024, 8192], "f32")], "twin": "t_matmul_bt",
        "desc": "GEMM a @ b.T, the transpose in linalg.matmul's indexing_maps"}),
    _p("l1_bmm", "single", [("a", [128, 512, 1024], "f32", "normal"),
                            ("b", [128, 1024, 2048], "f32", _w(1024))],
       [([128, 512, 2048], "f32")], "batched GEMM 128 x 512x1024x2048"),
    _p("l1_softmax", "single", [_x(ROWS)], [(ROWS, "f32")],
       "softmax over rows of 393,216"),
    _p("l1_layernorm", "single", [_x([16] + AFFINE),
                                  ("w", AFFINE, "f32", "uniform:0.5:1.5"),
                                  ("b", AFFINE, "f32", "normal:0.1")],
       [([16] + AFFINE, "f32")], "LayerNorm over (64,256,256), elementwise affine"),
    _p("l1_rmsnorm_channels", "single", [_x(NCHW)], [(NCHW, "f32")],
       "RMSNorm over the channels (dim 1) of NCHW"),
    _p("l1_groupnorm", "single", [_x(NCHW), ("w", [64], "f32", "uniform:0.5:1.5"),
                                  ("b", [64], "f32", "normal:0.1")],
       [(NCHW, "f32")], "GroupNorm, 8 groups of 8 channels"),
    _p("l1_sum_dim1", "single", [_x(RED)], [([16, 1, 4095], "f32")],
       "sum over dim 1 of 3 (keepdim)"),
    _p("l1_mean_dim1", "single", [_x(RED)], [([16, 4095], "f32")],
       "mean over dim 1 of 3"),
    _p("l1_max_dim1", "single", [_x(RED)], [([16, 4095], "f32")],
       "torch.max over dim 1 of 3 (values; indices dropped)"),
    _p("l1_sum_last", "single", [_x(RED)], [([16, 4096], "f32")],
       "sum over the innermost dim (4095)"),
    _p("l1_mean_last", "single", [_x(RED)], [([16, 4096], "f32")],
       "mean over the innermost dim (4095)"),
    _p("l1_amax_last", "single", [_x(RED)], [([16, 4096], "f32")],
       "amax over the innermost dim (4095)"),
    _p("l1_new_gelu", "single", [_x([8192, 8192])], [([8192, 8192], "f32")],
       "MinGPTNewGelu, op by op"),
    _p("l1_relu", "single", [_x(ROWS)], [(ROWS, "f32")], "ReLU"),
    _p("l1_sigmoid", "single", [_x(ROWS)], [(ROWS, "f32")], "sigmoid"),
    _p("l1_tanh", "single", [_x(ROWS)], [(ROWS, "f32")], "tanh"),
    _p("l1_maxpool2d", "single", [_x(NCHW)], [([8, 64, 511, 511], "f32")],
       "max-pool 4x4, stride 1, padding 1"),
    _p("l1_conv2d", "single", [_x([128, 3, 224, 224]),
                               ("w", [96, 3, 11, 11], "f32", _w(3 * 121)),
                               ("b", [96], "f32", "normal:0.1")],
       [([128, 96, 55, 55], "f32")], "conv 11x11, stride 4, padding 2, 3 -> 96 (AlexNet)"),
    # level 2
    _p("l2_gemm_bias_relu", "fused", _linear(1024, 8192, 8192), [([1024, 8192], "f32")],
       "relu(linear(x, w) + b)"),
    _p("l2_gemm_div_gelu", "fused", _linear(1024, 8192, 8192), [([1024, 8192], "f32")],
       "gelu(linear(x, w, b) / 10)"),
    _p("l2_gemm_scale_residual", "fused", _linear(16384, 4096, 4096),
       [([16384, 4096], "f32")], "h = linear(x, w, b); h * 0.5 + h"),
    _p("l2_gemm_softmax", "fused", _linear(128, 16384, 16384), [([128, 16384], "f32")],
       "softmax(linear(x, w, b)) over rows"),
    _p("l2_gemm_sigmoid_gemm_lse", "fused",
       [_x([16384, 2048]), ("w1", [4096, 2048], "f32", _w(2048)),
        ("b1", [4096], "f32", "normal:0.1"), ("w2", [1024, 4096], "f32", _w(4096)),
        ("b2", [1024], "f32", "normal:0.1")],
       [([16384], "f32")], "logsumexp(linear(sigmoid(linear(x))))"),
    _p("l2_gemm_layernorm", "fused",
       _linear(1024, 8192, 8192) + [("gamma", [8192], "f32", "uniform:0.5:1.5"),
                                    ("beta", [8192], "f32", "normal:0.1")],
       [([1024, 8192], "f32")], "layer_norm(linear(x, w, b))"),
    _p("l2_gemm_groupnorm_hardtanh", "fused",
       _linear(1024, 8192, 8192) + [("gamma", [8192], "f32", "uniform:0.5:1.5"),
                                    ("beta", [8192], "f32", "normal:0.1")],
       [([1024, 8192], "f32")], "hardtanh(group_norm(linear(x, w, b), 16))"),
    _p("l2_conv_relu_bias", "fused",
       [_x([128, 64, 128, 128]), ("w", [128, 64, 3, 3], "f32", _w(64 * 9)),
        ("b", [128], "f32", "normal:0.1"), ("bias", [128, 1, 1], "f32", "normal")],
       [([128, 128, 126, 126], "f32")], "relu(conv3x3(x) + b) + bias"),
    _p("l2_conv_relu_maxpool", "fused",
       [_x([128, 64, 112, 112]), ("w", [128, 64, 3, 3], "f32", _w(64 * 9)),
        ("b", [128], "f32", "normal:0.1")],
       [([128, 128, 56, 56], "f32")], "maxpool2(relu(conv3x3(x, padding 1) + b))"),
    _p("l2_attention", "fused", [("q", QKV, "f32", "normal"), ("k", QKV, "f32", "normal"),
                                 ("v", QKV, "f32", "normal")],
       [(QKV, "f32")], "softmax(q @ k^T / 8) @ v, 16x16 heads, 1024 tokens, 64"),
])
