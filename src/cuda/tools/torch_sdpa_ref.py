"""PyTorch's SDPA backends on the backend's attention shapes, timed with CUDA events, median of
20 after 5 warm-ups, each call waited for before the next (torch_timing.py); FLOPs as the FlashAttention
papers count them (forward 4 s^2 d heads halved when causal, d the mean of qk and v head dims;
backward 2.5x forward)."""
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

from torch_timing import median_ms

SHAPES = {  # name: (heads, kv heads, qk head dim, v head dim)
    "mla": (128, 128, 192, 128),
    "gqa": (32, 8, 128, 128),
}


def run(name, seq, backend):
    hq, hk, dqk, dv = SHAPES[name]
    q = torch.randn(1, hq, seq, dqk, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, hk, seq, dqk, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, hk, seq, dv, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    gqa = hk != hq
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
        dout = torch.randn_like(out)
        fwd = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa),
                        sync_each=True)
        bwd = median_ms(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), sync_each=True)
    flops_fwd = 4.0 * seq * seq / 2 * 0.5 * (dqk + dv) * hq
    tflops = 3.5 * flops_fwd / ((fwd + bwd) * 1e-3) / 1e12
    print(f"{name} s={seq} {backend.name}: fwd {fwd:.3f} ms bwd {bwd:.3f} ms fwd+bwd {tflops:.0f} TFLOP/s")


if __name__ == "__main__":
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "cudnn", torch.backends.cudnn.version())
    for name in SHAPES:
        for seq in (4096, 8192):
            for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
                try:
                    run(name, seq, backend)
                except Exception as e:  # a backend that does not take the shape says so
                    print(f"{name} s={seq} {backend.name}: not run ({str(e).splitlines()[0][:120]})")
