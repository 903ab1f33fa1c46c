"""Is the compiled result the eager one? Outputs (and a training step's gradients) compared on the host."""
from __future__ import annotations

import torch

from runner.zoo import ZooEntry

# relative error ||compiled - eager|| / ||eager|| that still counts as the same result
TOLERANCE = {"float32": 1e-4, "bfloat16": 3e-2, "float16": 5e-3, "amp-bfloat16": 3e-2, "amp-float16": 5e-3}
COMPARE_CHUNK = 1 << 22


def tensors(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in tensors(o)]
    return []


def reference(out, trained_model) -> list[torch.Tensor]:
    """Host copies of what a call produced: the outputs, plus every gradient for a training step."""
    host = [t.detach().to("cpu", copy=True) for t in tensors(out)]
    if trained_model is not None:
        host += [p.grad.detach().to("cpu", copy=True) for p in trained_model.parameters() if p.grad is not None]
    return host


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
        diff_sq, ref_sq = 0.0, 0.0
        # float64, in chunks: a 100M-element output must not need several GB at once
        for a64, b64 in zip(a.reshape(-1).split(COMPARE_CHUNK), b.reshape(-1).split(COMPARE_CHUNK)):
            a64, b64 = a64.to(b64.device).double(), b64.double()
            finite_a, finite_b = a64.isfinite(), b64.isfinite()
            odd = ~finite_a | ~finite_b
            if bool(odd.any()):
                same = (a64[odd] == b64[odd]) | (a64[odd].isnan() & b64[odd].isnan())
                nonfinite_mismatch |= not bool(same.all())
            finite = finite_a & finite_b
            d = (a64 - b64)[finite]
            if d.numel():
                max_abs = max(max_abs, float(d.abs().max()))
                diff_sq += float((d * d).sum())
                ref_sq += float((a64[finite] ** 2).sum())
        rel = (diff_sq ** 0.5) / (ref_sq ** 0.5) if ref_sq > 0 else (0.0 if diff_sq == 0 else float("inf"))
        worst_rel = max(worst_rel, rel)
    ok = (not nonfinite_mismatch) and worst_rel <= TOLERANCE[dtype]
    note = f"largest per-tensor relative error vs tolerance {TOLERANCE[dtype]:g} for {dtype}"
    if nonfinite_mismatch:
        note += "; NaN/inf differ in place or sign"
    return {"max_abs_error": max_abs, "rel_error": worst_rel, "ok": ok, "note": note}
