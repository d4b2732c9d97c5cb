# ===- bench/suite_report.py - The benchmark suite's tables and chart -----===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Turns the rows bench/run_suite.py measured into speedups, summaries
# (geometric means, fast_p), the Markdown table and the SVG chart. Needs no
# torch. docs/Benchmark.md says how to read them.
#
# ===----------------------------------------------------------------------===#

import math

P_VALUES = (1.0, 1.2, 1.5)
MODES = ("compile", "max_autotune")


def fmt_ms(res):
    if not res or "median_ms" not in res:
        return "-"
    mark = "" if res.get("check", {}).get("ok") else "!"
    return "%.3f%s" % (res["median_ms"], mark)


# --- summary -------------------------------------------------------------------

def good(res):
    return bool(res) and "median_ms" in res and res.get("check", {}).get("ok", False)


def best_compile(row):
    cands = [row.get(m) for m in MODES if good(row.get(m))]
    return min(cands, key=lambda r: r["median_ms"]) if cands else None


# The sides a problem is measured on; best_compile is the faster of the two
# torch.compile modes' correct results.
SIDES = ("eager", "compile", "max_autotune", "best_compile", "kopt_base", "kopt_tuned")


def side(row, key):
    return best_compile(row) if key == "best_compile" else row.get(key)


def speedups(row):
    """kopt tuned's speedup over each reference, where both are valid."""
    tuned = row.get("kopt_tuned")
    out = {}
    if not good(tuned):
        return out
    for k in SIDES[:-1]:
        r = side(row, k)
        if good(r):
            out[k] = r["median_ms"] / tuned["median_ms"]
    return out


def floor_fractions(row):
    """The share of the problem's physical floor each correct side reached:
    the floor's time over the side's median."""
    floor_ms = (row.get("floor") or {}).get("ms")
    if not floor_ms:
        return {}
    return {k: floor_ms / side(row, k)["median_ms"] for k in SIDES if good(side(row, k))}


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarize(rows):
    n = len(rows)
    s = {"problems": n, "geomean": {}, "fast_p": {}, "floor_fraction": {}}
    for ref in SIDES[:-1]:
        vals = [r["speedup"][ref] for r in rows if ref in r["speedup"]]
        s["geomean"][ref] = {"value": geomean(vals), "over": len(vals)}
        # fast_p: share of all problems where kopt tuned is correct and
        # faster than the reference by more than p. A problem whose
        # reference is missing (failed, skipped) counts as not fast.
        s["fast_p"][ref] = {("%.1f" % p): (sum(1 for r in rows
                                               if r["speedup"].get(ref, 0) > p) / n
                                           if n else 0.0)
                            for p in P_VALUES}
    for k in SIDES:
        vals = [r["floor_fraction"][k] for r in rows if k in r.get("floor_fraction", {})]
        s["floor_fraction"][k] = {"value": geomean(vals), "over": len(vals)}
    s["kopt_tuned_correct"] = sum(1 for r in rows if good(r.get("kopt_tuned")))
    # For context: how much torch.compile itself gains over eager.
    for mode in MODES:
        vals = [r["eager"]["median_ms"] / r[mode]["median_ms"] for r in rows
                if good(r.get("eager")) and good(r.get(mode))]
        s["%s_over_eager" % mode] = {"value": geomean(vals), "over": len(vals)}
    return s


def pct(v):
    return "%.0f%%" % (100 * v) if v else "-"


def fmt_floor(floor):
    if not floor or not floor.get("ms"):
        return "-"
    return "%.3f %s" % (floor["ms"], "mem" if floor["bound"] == "memory" else "fp32")


def notes(r):
    out = []
    if r.get("error"):
        out.append(r["error"].splitlines()[0][:120])
    for k in ("eager", "compile", "max_autotune", "kopt_base", "kopt_tuned"):
        res = r.get(k) or {}
        if res.get("error"):
            out.append("%s: %s" % (k, res["error"].splitlines()[0][:80]))
        elif res.get("skipped"):
            out.append("%s skipped: %s" % (k, res["skipped"]))
        elif "check" in res and not res["check"]["ok"]:
            out.append("%s INCORRECT" % k)
    return out


def table(rows, summary):
    def sp(r, k):
        v = r["speedup"].get(k)
        return "%.2fx" % v if v else "-"
    lines = ["| problem | kind | MB | floor ms | eager ms | compile ms | max-autotune ms "
             "| best compile ms | kopt base ms | kopt tuned ms "
             "| floor reached: eager / best compile / base / tuned "
             "| tuned/eager | tuned/best compile | tuned/base | kopt groups (chosen plans) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        plans = "; ".join("%s %s/%s" % (g.get("kind"), g.get("proposer"), g.get("variant"))
                          for g in (r.get("kopt_tuned") or {}).get("groups", []) or [])
        ff = r.get("floor_fraction", {})
        floor = r.get("floor") or {}
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s "
                     "| %s |" % (
                         r["name"], r["kind"],
                         "%.0f" % (floor["bytes"] / 1e6) if floor.get("bytes") else "-",
                         fmt_floor(floor), fmt_ms(r.get("eager")), fmt_ms(r.get("compile")),
                         fmt_ms(r.get("max_autotune")), fmt_ms(best_compile(r)),
                         fmt_ms(r.get("kopt_base")), fmt_ms(r.get("kopt_tuned")),
                         " / ".join(pct(ff.get(k)) for k in ("eager", "best_compile",
                                                             "kopt_base", "kopt_tuned")),
                         sp(r, "eager"), sp(r, "best_compile"), sp(r, "kopt_base"),
                         "; ".join([plans or "-"] + notes(r))))
    g = summary["geomean"]
    lines.append("")
    lines.append("| kopt tuned over | geometric mean | problems | fast_1.0 | fast_1.2 | fast_1.5 |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    for ref, label in (("eager", "PyTorch eager"), ("compile", "torch.compile default"),
                       ("max_autotune", "torch.compile max-autotune-no-cudagraphs"),
                       ("best_compile", "torch.compile, better of the two modes"),
                       ("kopt_base", "kopt baseline plans")):
        v = g[ref]["value"]
        fp = summary["fast_p"][ref]
        lines.append("| %s | %s | %d | %.0f%% | %.0f%% | %.0f%% |" % (
            label, "%.3fx" % v if v else "-", g[ref]["over"],
            100 * fp["1.0"], 100 * fp["1.2"], 100 * fp["1.5"]))
    lines.append("")
    lines.append("| side | floor reached (geometric mean) | problems |")
    lines.append("|---|---:|---:|")
    for k, label in (("eager", "PyTorch eager"), ("compile", "torch.compile default"),
                     ("max_autotune", "torch.compile max-autotune-no-cudagraphs"),
                     ("best_compile", "torch.compile, better of the two modes"),
                     ("kopt_base", "kopt baseline plans"), ("kopt_tuned", "kopt tuned")):
        v = summary["floor_fraction"][k]
        lines.append("| %s | %s | %d |" % (label, pct(v["value"]), v["over"]))
    for mode, label in (("compile", "torch.compile default"),
                        ("max_autotune", "torch.compile max-autotune-no-cudagraphs")):
        v = summary["%s_over_eager" % mode]
        if v["value"]:
            lines.append("")
            lines.append("For context, %s over eager: geometric mean %.3fx over %d "
                         "problems." % (label, v["value"], v["over"]))
    return "\n".join(lines)


def svg_chart(rows, title, summary):
    """Horizontal bars per problem on a log2 axis: kopt tuned's speedup over
    eager, torch.compile (better mode) and the kopt baseline."""
    series = [("eager", "#4472c4", "over eager"),
              ("best_compile", "#ed7d31", "over torch.compile (better mode)"),
              ("kopt_base", "#70ad47", "over kopt baseline")]
    lo, hi = -2.0, 3.0  # log2 range: 0.25x to 8x
    bar, gap, left, width = 7, 8, 230, 520
    height = 70 + len(rows) * (len(series) * bar + gap) + 50
    x = lambda v: left + (min(max(math.log2(v), lo), hi) - lo) / (hi - lo) * width
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (left + width + 40, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="18" font-size="14">%s</text>' % escape(title)]
    g = summary["geomean"]
    means = ", ".join("%s %.2fx" % (label, g[k]["value"]) for k, label in
                      (("eager", "over eager"), ("best_compile", "over torch.compile"),
                       ("kopt_base", "over the kopt baseline")) if g[k]["value"])
    out.append('<text x="10" y="%d">geometric means: %s</text>'
               % (height - 2, escape(means or "none")))
    for i, (_, color, label) in enumerate(series):
        out.append('<rect x="%d" y="28" width="10" height="10" fill="%s"/>'
                   '<text x="%d" y="37">%s</text>' % (10 + 230 * i, color, 24 + 230 * i,
                                                     escape(label)))
    top = 55
    for e in range(int(lo), int(hi) + 1):
        xv = x(2.0 ** e)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>'
                   % (xv, top, xv, height - 30, "#000" if e == 0 else "#ddd"))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%gx</text>'
                   % (xv, height - 15, 2.0 ** e))
    y = top + 4
    for r in rows:
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>'
                   % (left - 6, y + len(series) * bar // 2 + 4, escape(r["name"])))
        for key, color, _ in series:
            v = r["speedup"].get(key)
            if v:
                x0, x1 = x(1.0), x(v)
                out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s">'
                           '<title>%s %s: %.2fx</title></rect>'
                           % (min(x0, x1), y, max(abs(x1 - x0), 1), bar - 1, color,
                              escape(r["name"]), key, v))
            y += bar
        y += gap
    out.append("</svg>")
    return "\n".join(out) + "\n"


def escape(s):
    return (str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def kopt_note(info):
    if info.get("missing"):
        return "not run: " + info["missing"]
    warm = info.get("warm")
    if not warm:
        return "no kopt warm"
    if "error" in warm:
        return "kopt warm failed: " + warm["error"].splitlines()[0][:200]
    return "kopt warm over the %d small problems' files took %.0f s (exit %d)" % (
        warm.get("files", 0), warm["seconds"], warm["exit"])


SET_TITLES = {"small": "The small set", "real": "The real-sized set"}


def markdown(report):
    """The whole results document: the run's settings and limits, then per
    set its table and summaries."""
    lim = report["limits"]
    st = report["settings"]
    out = ["# kopt against PyTorch on the benchmark suite", "",
           "- date: %s" % report["date"],
           "- device: %s; torch %s, triton %s, CUDA %s" % (
               report["device"], report["torch"], report["triton"], report["cuda"]),
           "- command: `%s`" % report["command"],
           "- fp32, TF32 off; median of %d runs, CUDA events, L2 flushed between runs; "
           "%.0f s in all" % (st["reps"], report["seconds"]),
           "- kopt: built-in proposer only (no LLM); kopt-run %s; %s" % (
               "with --graph" if st["kopt_graph"] else "without CUDA graphs",
               kopt_note(report["kopt"])),
           "- limits measured in this run: copy bandwidth %.2f TB/s (device-to-device "
           "copy of %.0f MiB, read plus written); cuBLAS fp32 %.1f TFLOP/s (%s); floors "
           "of compute-bound problems at %.1f TFLOP/s fp32 (%s)" % (
               lim["copy_bytes_per_s"] / 1e12, lim["copy_bytes"] / 2 / 2**20,
               lim["cublas_fp32_flops_per_s"] / 1e12, lim["cublas_fp32_gemm"],
               lim["fp32_peak_flops_per_s"] / 1e12, lim["fp32_peak_source"]),
           "",
           "Times in ms; `!` marks an output that failed the check against the fp64 "
           "reference. MB: compulsory bytes (each input read once, each output "
           "written once). Floor: the larger of those bytes over the copy bandwidth "
           "(mem) and the matrix FLOPs over the fp32 peak (fp32); floor reached is the "
           "floor over the side's time. Best compile: the faster of torch.compile's "
           "two modes. Speedups are kopt tuned's over each column; fast_p is the share "
           "of the set's problems where kopt tuned is correct and faster than the "
           "reference by more than p (docs/Benchmark.md).", ""]
    for k, summary in report["summary"].items():
        rows = [r for r in report["rows"] if r["set"] == k]
        out += ["## %s (%d problems)" % (SET_TITLES.get(k, k), len(rows)), "",
                table(rows, summary), ""]
    return "\n".join(out)
