#!/usr/bin/env python3
"""Markdown tables from a remat-bench measurements JSON: times, memory, speedups, efficiencies."""
import json
import sys


def ms(v):
    return f"{v * 1e3:.3f}"


def main(path):
    m = json.load(open(path))
    d = m["device"]
    out = [f"Device: {d['name']} ({d['sm_count']} SMs, SM clock max {d['sm_clock_max_mhz']} MHz, memory clock max "
           f"{d['memory_clock_max_mhz']} MHz), driver {d['driver_version']}, CUDA runtime {d['cuda_runtime_version']}, "
           f"cuDNN {d['cudnn_version']}, cuBLASLt {d['cublaslt_version']}; commit {m['git_commit']}; "
           f"{m['settings']['reps']} timed reps (median) after {m['settings']['warmup']} warm-up; MoE routing "
           f"{m['settings']['routing']}.", ""]
    out += ["| block | s | strategy | forward ms | backward ms | recompute ms | kept MB | peak MB | grads vs none |",
            "|---|---|---|---|---|---|---|---|---|"]
    for c in m["cases"]:
        g = c.get("gradients", {})
        be = g.get("all_bit_equal", g.get("rerun", {}).get("all_bit_equal"))
        tag = "rerun " if c["strategy"] == "none" else ""
        out.append(f"| {c['block']} | {c['dims']['s']} | {c['strategy']} | {ms(c['forward_s'])} | {ms(c['backward_s'])} | "
                   f"{ms(c['recompute_s'])} | {c['kept_bytes'] / 1e6:.1f} | {c['peak_bytes'] / 1e6:.1f} | "
                   f"{tag}{'bit-equal' if be else 'differs'} |")
    out += ["", "Eagle over standard, recompute time:", "",
            "| block | s | standard ms | eagle ms | speedup | paper Table 2 |", "|---|---|---|---|---|---|"]
    for x in m["summary"]["eagle_vs_standard_recompute"]:
        out.append(f"| {x['block']} | {x['s']} | {ms(x['standard_recompute_s'])} | {ms(x['eagle_recompute_s'])} | "
                   f"{x['speedup']:.2f}x | {x['paper_table2_speedup']}x |")
    out += ["", "Kernel efficiency (none strategy; fraction of dense bf16 peak / of HBM bandwidth; RMSNorm and SwiGLU: the largest instance in the block):", "",
            "| block | s | best GEMM | attention fwd+bwd | RMSNorm fwd | RMSNorm bwd | SwiGLU fwd | SwiGLU bwd |",
            "|---|---|---|---|---|---|---|---|"]
    for e in m["summary"]["kernel_efficiency"]:
        def f(k, unit):
            if k not in e:
                return "-"
            v = e[k]
            return f"{v[unit]:.0f} ({v['fraction_of_peak'] * 100:.0f}%)"
        out.append(f"| {e['block']} | {e['s']} | {f('best_gemm', 'tflops')} | {f('attention_fwd_bwd', 'tflops')} | "
                   f"{f('rmsnorm_gbps', 'gbps')} | {f('rmsnorm_bwd_gbps', 'gbps')} | {f('swiglu_gbps', 'gbps')} | "
                   f"{f('swiglu_bwd_gbps', 'gbps')} |")
    off = [c for c in m["cases"] if c["strategy"] == "offload"]
    out += ["", "Offload (copies to pinned host memory on a second stream):", "",
            "| block | s | bytes MB | D2H ms | GB/s | exposed ms | overlap | H2D (prefetch) ms |", "|---|---|---|---|---|---|---|---|"]
    for c in off:
        o = c["offload"]
        gbps = o["bytes"] / o["d2h_s"] * 1e-9 if o["d2h_s"] > 0 else 0
        out.append(f"| {c['block']} | {c['dims']['s']} | {o['bytes'] / 1e6:.1f} | {ms(o['d2h_s'])} | {gbps:.1f} | "
                   f"{ms(o['exposed_d2h_s'])} | {o['overlap_fraction'] * 100:.0f}% | {ms(o['prefetch_s'])} |")
    if "correctness" in m:
        out += ["", "Correctness at small dims (s = 128): bit equality against none, and none against the fp32 CPU "
                "reference (worst tensor):", "", "| block | standard | eagle | offload | none rerun | fp32 ref | worst max_abs/ref_max | worst mean_rel |",
                "|---|---|---|---|---|---|---|---|"]
        for r in m["correctness"]:
            b = r["bit_equal_vs_none"]
            t = r["fp32_reference"]["tensors"]
            wmax = max(x["max_abs"] / x["ref_max_abs"] for x in t)
            wrel = max(x["mean_rel"] for x in t)
            out.append(f"| {r['block']} | {b['standard']} | {b['eagle']} | {b['offload']} | {b['none_rerun']} | "
                       f"{'pass' if r['fp32_reference']['pass'] else 'FAIL'} | {wmax:.4f} | {wrel:.4f} |")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
