"""Liger-Kernel's cross-entropy (a production Triton kernel, unedited) at an
LLM's sizes on the DPU model: its forward and backward over logits of
`--tokens` x `--vocab` f32 (8,192 x 128,256, Llama 3's vocabulary: 4.2 GB,
far more than one DPU's 64 MiB), the launch spread over `--dpus` DPUs
(EDSL_NUM_DPUS, as for any library's launches), each DPU receiving only its
rows. Prints the time against torch's CPU cross-entropy of the same logits
(forward and backward, in one run), the largest DPU part, the peak resident
memory against the logits' bytes, and the error against float64.

Needs Liger-Kernel: `python scripts/liger_conformance.py prepare DEST`
installs it.

    python benchmarks/liger_cross_entropy.py [--tokens 8192] [--vocab 128256] [--dpus 64] [--tasklets 16]
"""
import argparse
import os
import resource
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--vocab", type=int, default=128_256)
    parser.add_argument("--dpus", type=int, default=64)
    parser.add_argument("--tasklets", type=int, default=16)
    a = parser.parse_args()
    os.environ["EDSL_NUM_DPUS"], os.environ["EDSL_NUM_TASKLETS"] = str(a.dpus), str(a.tasklets)
    import torch
    import torch.nn.functional as F

    import edsl.backend
    try:
        from liger_kernel.transformers.cross_entropy import LigerCrossEntropyLoss
    except ImportError:
        sys.exit("Liger-Kernel is not installed: python scripts/liger_conformance.py prepare DEST")
    edsl.backend.activate()
    rows = 256

    def logits(i):                     # rows i*256.., made again for the references
        return torch.randn(min(rows, a.tokens - i * rows), a.vocab, generator=torch.Generator().manual_seed(i))
    chunks = range(-(-a.tokens // rows))
    target = torch.randint(0, a.vocab, (a.tokens,), generator=torch.Generator().manual_seed(a.tokens))
    x = torch.cat([logits(i) for i in chunks]).requires_grad_(True)
    LigerCrossEntropyLoss()(x[:rows].detach().clone().requires_grad_(True), target[:rows]).backward()  # compile
    start = time.perf_counter()
    loss = LigerCrossEntropyLoss()(x, target)
    loss.backward()                    # (Liger writes the gradient into the logits' storage)
    model = time.perf_counter() - start
    report = edsl.backend.last_report()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    grad = x.grad
    del x
    ref = torch.cat([logits(i) for i in chunks]).requires_grad_(True)
    start = time.perf_counter()
    F.cross_entropy(ref, target).backward()
    cpu = time.perf_counter() - start
    del ref
    exact, err = 0.0, 0.0
    for i in chunks:
        xc = logits(i).double().requires_grad_(True)
        part = F.cross_entropy(xc, target[i * rows:(i + 1) * rows], reduction="sum")
        part.backward()
        exact += float(part.detach())
        err = max(err, float((grad[i * rows:(i + 1) * rows].double() - xc.grad / a.tokens).abs().max()))
    data = a.tokens * a.vocab * 4
    print(f"Liger cross-entropy, {a.tokens} x {a.vocab} f32 logits ({data / 2**30:.2f} GiB), forward and backward, "
          f"{report.num_dpus} DPUs x {report.num_tasklets} tasklets")
    print(f"  DPU model {model:.1f} s, torch CPU {cpu:.2f} s: {model / cpu:.1f}x torch's time")
    print(f"  largest DPU part {max(report.per_dpu_part_bytes) / 2**20:.1f} MiB (of a DPU's 64 MiB); "
          f"peak resident {peak / 2**30:.2f} GiB ({peak / data:.2f}x the logits)")
    print(f"  loss {float(loss.detach()):.9g}, float64 {exact / a.tokens:.9g}; gradient max abs error {err:.2g}")


if __name__ == "__main__":
    main()
