"""CUDA-event timing shared by the PyTorch reference scripts: warm-ups, then the median of `reps`
timed calls. sync_each waits for every call before the next (a short idle gap between calls, as the
SDPA reference ran); otherwise the calls run back to back, as remat-bench's kernels do."""
import statistics
import torch


def median_ms(fn, reps=20, warmup=5, sync_each=False):
    for _ in range(warmup):
        fn()
    events = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        if sync_each:
            b.synchronize()
        events.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in events)
