# ===- bench/suite_floor.py - The physical floor of each suite problem -----===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# The two limits bench/run_suite.py judges every time against, measured in
# the run itself: the copy bandwidth (a device-to-device copy, bytes read
# plus bytes written) and, for context, cuBLAS's fp32 GEMM rate. A problem's
# floor is the larger of its compulsory bytes (each input read once, each
# output written once) over the copy bandwidth and its matrix FLOPs (GEMMs,
# convolutions, as torch's FLOP counter counts them) over the fp32 peak
# without tensor cores: no fp32 kernel runs much faster. docs/Benchmark.md
# says how to read the fractions of it.
#
# ===----------------------------------------------------------------------===#

# fp32 FMA throughput without tensor cores, by the datasheets (SXM parts);
# on other devices the floor uses the cuBLAS rate measured in the run.
FP32_PEAK = {"H100 80GB HBM3": 67e12, "H200": 67e12}
COPY_BYTES = 1 << 30  # per buffer: 1 GiB read and 1 GiB written
GEMM_N = 8192


def measure_limits(torch, timer, peak_tflops=None):
    """The copy bandwidth and the cuBLAS fp32 rate measured here (medians
    of CUDA-event timings, TF32 as the caller set it), and the fp32 peak the
    floors use: --fp32-peak, else the datasheet's, else cuBLAS's."""
    copy = _time_copy(torch, timer)
    gemm = _time_gemm(torch, timer)
    torch.cuda.empty_cache()
    out = {"copy_bytes": 2 * COPY_BYTES, "copy_ms": copy["median_ms"],
           "copy_bytes_per_s": 2 * COPY_BYTES / (copy["median_ms"] * 1e-3),
           "cublas_fp32_gemm": "%dx%dx%d" % (GEMM_N, GEMM_N, GEMM_N),
           "cublas_fp32_ms": gemm["median_ms"],
           "cublas_fp32_flops_per_s": 2.0 * GEMM_N**3 / (gemm["median_ms"] * 1e-3)}
    name = torch.cuda.get_device_name(0)
    datasheet = [v for k, v in FP32_PEAK.items() if k in name]
    if peak_tflops:
        out["fp32_peak_flops_per_s"], out["fp32_peak_source"] = peak_tflops * 1e12, "--fp32-peak"
    elif datasheet:
        out["fp32_peak_flops_per_s"], out["fp32_peak_source"] = datasheet[0], "datasheet"
    else:
        out["fp32_peak_flops_per_s"] = out["cublas_fp32_flops_per_s"]
        out["fp32_peak_source"] = "cuBLAS fp32 measured"
    return out


def _time_copy(torch, timer):
    src = torch.randn(COPY_BYTES // 4, device="cuda")
    dst = torch.empty_like(src)
    return timer(lambda: dst.copy_(src), 20)


def _time_gemm(torch, timer):
    a = torch.randn(GEMM_N, GEMM_N, device="cuda")
    b = torch.randn(GEMM_N, GEMM_N, device="cuda")
    c = torch.empty_like(a)
    return timer(lambda: torch.mm(a, b, out=c), 10, warmup=2)


def count_flops(torch, fn, spec):
    """The matrix FLOPs of `fn` on the problem's shapes (meta tensors: no
    memory, no GPU work), or None when the counter fails."""
    from torch.utils.flop_counter import FlopCounterMode
    args = [torch.empty(s, device="meta") for _, s, _, _ in spec["inputs"]]
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            fn(*args)
        return counter.get_total_flops()
    except Exception:
        return None


def floor(nbytes, flops, limits):
    """The problem's physical floor: its time and which limit sets it."""
    memory_ms = nbytes / limits["copy_bytes_per_s"] * 1e3
    compute_ms = (flops or 0) / limits["fp32_peak_flops_per_s"] * 1e3
    return {"bytes": nbytes, "flops": flops, "memory_ms": memory_ms,
            "compute_ms": compute_ms, "ms": max(memory_ms, compute_ms),
            "bound": "memory" if memory_ms >= compute_ms else "compute"}


def time_limits(floor_ms, reps, kopt_timeout):
    """Seconds for kopt's calls on one problem: the fixed --kopt-timeout
    plus room for kernels up to 100 times slower than the floor, over
    kopt-run's runs (the timed ones and 10 more) and over about ten times as
    many runs while tuning (the evaluator's validation and timing of every
    candidate)."""
    runs_s = (reps + 10) * 100 * floor_ms * 1e-3
    return {"kopt_run_s": round(kopt_timeout + runs_s),
            "kopt_compile_s": round(kopt_timeout + 10 * runs_s)}
