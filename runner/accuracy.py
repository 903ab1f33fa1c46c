"""Is the compiled result the eager one? Outputs (and a training step's gradients) compared on the host."""
from __future__ import annotations

import torch

from runner.zoo import ZooEntry

# relative error ||compiled - eager|| / ||eager|| that still counts as the same result
TOLERANCE = {"float32": 1e-4, "bfloat16": 3e-2, "float16": 5e-3, "amp-bfloat16": 3e-2, "amp-float16": 5e-3}
COMPARE_CHUNK = 1 << 22  # elements compared at once, in float64
DEVICE_SHARE = 0.1  # of the GPU's free memory, that an accuracy reference may hold there


def tensors(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in tensors(o)]
    return []


def reference(out, trained_model) -> tuple[list[torch.Tensor], int]:
    """Copies of what a call produced: the outputs, plus every gradient for a training step; and the bytes they
    hold on the device (0 where they went to the host). A GPU keeps its copies where they fit in DEVICE_SHARE of
    its free memory: a round trip through the host cost sincos bs 10000 (400 MB of output) 0.5-0.6 s per job on
    an H100, lab overhead on every first run. Larger ones go to the host, so they take no device memory."""
    found = on_device(out, trained_model)
    size = sum(t.numel() * t.element_size() for t in found)
    if found and found[0].device.type == "cuda" and size <= DEVICE_SHARE * torch.cuda.mem_get_info()[0]:
        before = torch.cuda.memory_allocated()
        kept = [t.clone() for t in found]
        return kept, torch.cuda.memory_allocated() - before  # as the allocator counts them (its blocks round up)
    return [t.to("cpu", copy=True) for t in found], 0


def on_device(out, trained_model) -> list[torch.Tensor]:
    """What a call produced, where it lies (the compiled side's, compared against the eager side's host copies)."""
    found = [t.detach() for t in tensors(out)]
    if trained_model is not None:
        found += [p.grad.detach() for p in trained_model.parameters() if p.grad is not None]
    return found


def skip_reason(entry: ZooEntry, model, training: bool) -> str | None:
    if entry.stochastic:
        return f"{entry.info.name} is random by design (STOCHASTIC); outputs are not compared"
    if training and any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules()):
        return "training with dropout: eager and compiled draw different masks; outputs are not compared"
    return None


def compare(ref: list, out: list, dtype: str, skip: str | None) -> dict:
    """Compiled vs eager over all outputs (and gradients): max |diff|, and the largest per-tensor
    ||diff|| / ||ref|| (one pooled norm would let a large tensor hide a wrong small one, a bias's
    gradient say). Non-finite values (NaN, +inf, -inf) must sit at the same places on both sides. Computed on the
    device `out` lies on, a chunk of `ref` at a time (on the host a 10000 x 10000 output took 5 s)."""
    if skip:
        return {"max_abs_error": None, "rel_error": None, "ok": None, "note": skip}
    if len(ref) != len(out) or any(a.shape != b.shape for a, b in zip(ref, out)):
        return {"max_abs_error": None, "rel_error": None, "ok": False,
                "note": "compiled outputs differ in number or shape from eager"}
    max_abs, worst_rel, nonfinite_mismatch = 0.0, 0.0, False
    for a, b in zip(ref, out):
        # float64, in chunks: a 100M-element output must not need several GB at once
        chunks = list(zip(a.reshape(-1).split(COMPARE_CHUNK), b.reshape(-1).split(COMPARE_CHUNK)))
        diff_sq, ref_sq, top, odd = _finite_sums(chunks) or _sums(chunks)
        max_abs = max(max_abs, top)
        nonfinite_mismatch |= odd
        rel = (diff_sq ** 0.5) / (ref_sq ** 0.5) if ref_sq > 0 else (0.0 if diff_sq == 0 else float("inf"))
        worst_rel = max(worst_rel, rel)
    ok = (not nonfinite_mismatch) and worst_rel <= TOLERANCE[dtype]
    note = f"largest per-tensor relative error vs tolerance {TOLERANCE[dtype]:g} for {dtype}"
    if nonfinite_mismatch:
        note += "; NaN/inf differ in place or sign"
    return {"max_abs_error": max_abs, "rel_error": worst_rel, "ok": ok, "note": note}


def _finite_sums(chunks: list) -> tuple[float, float, float, bool] | None:
    """(sum of squared differences, sum of squared references, largest |difference|, False) where every value on
    both sides is finite, else None. Few distinct kernels (on a GPU each is loaded at its first use: the full
    check's twenty cost every first run ~0.1 s); the sums stay on the device until the first is read."""
    parts = []
    for a64, b64 in chunks:
        if not b64.numel():
            continue
        a64, b64 = a64.to(b64.device).double(), b64.double()
        d = a64 - b64  # finite exactly where both sides are (inf - x, nan - x are not)
        parts.append((d.isfinite().all(), d.abs().amax(), d.square().sum(), a64.square().sum()))
    if not all(bool(p[0]) for p in parts):
        return None
    return (sum(float(p[2]) for p in parts), sum(float(p[3]) for p in parts),
            max((float(p[1]) for p in parts), default=0.0), False)


def _sums(chunks: list) -> tuple[float, float, float, bool]:
    """As _finite_sums, where a NaN or infinity lies on either side: those places are left out of the sums and must
    be the same on both sides (the fourth value is True where they differ). One synchronisation per tensor."""
    device = chunks[0][1].device
    zero = torch.zeros((), dtype=torch.float64, device=device)
    diff_sq, ref_sq, top, odd_differ = zero, zero, zero, torch.zeros((), dtype=torch.bool, device=device)
    for a64, b64 in chunks:
        a64, b64 = a64.to(b64.device).double(), b64.double()
        finite = a64.isfinite() & b64.isfinite()
        same = (a64 == b64) | (a64.isnan() & b64.isnan())
        odd_differ = odd_differ | (~finite & ~same).any()
        d = torch.where(finite, a64 - b64, zero)
        if d.numel():
            top = torch.maximum(top, d.abs().max())
        diff_sq = diff_sq + (d * d).sum()
        ref_sq = ref_sq + torch.where(finite, a64, zero).square().sum()
    return float(diff_sq), float(ref_sq), float(top), bool(odd_differ)

