"""PyTorch's bf16 GEMMs (cuBLAS) on the backend's largest MLP shapes, timed like remat-bench: back to
back, CUDA events, median of 20 after 5 warm-ups; y = x W^T as nn.Linear. An outside reference for
the GEMM efficiency in the measurements."""
import torch
import torch.nn.functional as F

from torch_timing import median_ms


if __name__ == "__main__":
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    for m, n, k in [(4096, 28672, 4096), (4096, 4096, 14336), (16384, 28672, 4096), (8192, 8192, 8192)]:
        x = torch.rand(m, k, device="cuda", dtype=torch.bfloat16) - 0.5
        w = torch.rand(n, k, device="cuda", dtype=torch.bfloat16) - 0.5
        ms = median_ms(lambda: F.linear(x, w))
        print(f"m={m} n={n} k={k}: {ms:.3f} ms {2.0 * m * n * k / (ms * 1e-3) / 1e12:.0f} TFLOP/s")
