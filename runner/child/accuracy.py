"""Is the compiled result the eager one? Judged as PyTorch's compiler harness judges it: where the two sides differ
past the dtype's tolerance, the compiled side passes when it lies no further from a float64 run of the same call
than a small multiple of eager's own distance from it (both are rounding; a wrong compile is far past eager's). What
a call produced is its outputs; a training step's is its loss and every parameter's gradient (SGD's update is the
learning rate times it). Compared where the compiled side lies, a chunk at a time in float64."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

import torch

from lab.wording import count
from runner.zoo import ZooEntry

# allclose's rtol and atol per dtype: within these nothing more is asked
TOLERANCE = {"float32": 1e-4, "bfloat16": 3e-2, "float16": 5e-3, "amp-bfloat16": 3e-2, "amp-float16": 5e-3}
# how far past eager's own error (root mean square against the float64 run) the compiled side may lie: the harness's
# multipliers, larger for half precision whose rounding varies more with the order of operations
MULTIPLIER = {"float32": 2.0, "bfloat16": 3.0, "float16": 3.0, "amp-bfloat16": 3.0, "amp-float16": 3.0}
COMPARE_CHUNK = 1 << 22  # elements compared at once, in float64
DEVICE_SHARE = 0.1  # of the GPU's free memory, that an accuracy reference may hold there
# a tensor this small is compared on the host: copying it there costs less than the GPU's first launch of each
# float64 kernel the comparison uses (each loaded on first use, in every fresh child)
HOST_COMPARE = 1 << 16


@dataclass
class Produced:
    """What one call produced, each tensor named ("output 0", "loss", "grad fc.weight"), and the device bytes a kept
    copy holds (0 where it went to the host)."""
    names: list[str]
    tensors: list[torch.Tensor]
    held: int = 0


def tensors(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in tensors(o)]
    return []


def on_device(out, trained_model, training: bool = False) -> Produced:
    """What a call produced, where it lies: its outputs (a training step's: its loss), and every gradient."""
    outs = [t.detach() for t in tensors(out)]
    names = ["loss"] if training and len(outs) == 1 else [f"output {i}" for i in range(len(outs))]
    if trained_model is not None:
        grads = [(n, p.grad.detach()) for n, p in trained_model.named_parameters() if p.grad is not None]
        names += [f"grad {n}" for n, _ in grads]
        outs += [g for _, g in grads]
    return Produced(names, outs)


def reference(out, trained_model, training: bool = False) -> Produced:
    """Copies of what a call produced. A GPU keeps its copies where they fit in DEVICE_SHARE of its free memory (a
    round trip through the host cost sincos bs 10000, 400 MB of output, 0.5-0.6 s per job on an H100); larger ones
    go to the host, so they take no device memory."""
    return kept(on_device(out, trained_model, training), copy_them=True)


def kept(found: Produced, copy_them: bool) -> Produced:
    size = sum(t.numel() * t.element_size() for t in found.tensors)
    if found.tensors and found.tensors[0].device.type == "cuda" and size <= DEVICE_SHARE * torch.cuda.mem_get_info()[0]:
        before = torch.cuda.memory_allocated()
        out = [t.clone() for t in found.tensors] if copy_them else list(found.tensors)
        return Produced(found.names, out, torch.cuda.memory_allocated() - before)  # as the allocator counts them
    return Produced(found.names, [t.to("cpu", copy=True) for t in found.tensors])


def pristine(model: torch.nn.Module) -> torch.nn.Module | str:
    """A private copy of the model before any step changed it, for the float64 run; or why there is none."""
    if any(isinstance(m, torch.nn.modules.lazy.LazyModuleMixin) for m in model.modules()):
        return "the model has lazy parameters (drawn at the first call in the call's dtype)"
    try:
        return copy.deepcopy(model)
    except Exception as exc:  # a module that cannot be copied
        return f"the model cannot be copied ({type(exc).__name__})"


def float64_run(model: torch.nn.Module | str, inputs: tuple, training: bool, make_step) -> Produced | str:
    """The same call in float64 from the same weights (`model`, a private copy: it is converted in place), or why it
    could not run. `make_step(model, training)` gives the call as the sides make it."""
    if isinstance(model, str):
        return model
    try:
        model.to(torch.float64)
        wide = tuple(t.to(torch.float64) if t.is_floating_point() else t for t in inputs)
        return kept(on_device(make_step(model, training)(wide), model if training else None, training),
                    copy_them=False)
    except torch.OutOfMemoryError:
        return "out of device memory for a float64 copy"
    except Exception as exc:  # an op with no float64 kernel on this device, or a model that fixes its own dtype
        first = (str(exc).splitlines() or [""])[0][:160]
        return f"the model does not run in float64 ({type(exc).__name__}: {first})"


def skip_reason(entry: ZooEntry, model, training: bool) -> str | None:
    if entry.stochastic:
        return f"{entry.info.name} is random by design (STOCHASTIC); outputs are not compared"
    if training and any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules()):
        return "training with dropout: eager and compiled draw different masks; outputs are not compared"
    return None


NOT_COMPARED = {"max_abs_error": None, "rel_error": None, "ok": None, "detail": None}
NOT_NEEDED = "not needed: every tensor within the tolerance"  # a float64 run asked for only past it


def compare(ref: Produced | list, out: Produced | list, dtype: str, skip: str | None,
            wide: Produced | str | Callable[[], Produced | str] | None = None) -> dict:
    """Compiled (`out`) vs eager (`ref`), tensor by tensor, with the float64 run `wide` (or why there is none; or a
    function that runs it, called only where a tensor lies past the tolerance, as the harness consults its float64
    reference only past allclose): max |diff|, the largest per-tensor ||diff|| / ||eager|| (one pooled norm would
    let a large tensor hide a wrong small one, a bias's gradient say), and the verdict. A tensor passes within the
    dtype's tolerance (allclose); past it, only where the float64 run says compiled is about as close to the truth
    as eager. Non-finite values (NaN, +inf, -inf) must sit at the same places on both sides."""
    if skip:
        return {**NOT_COMPARED, "note": skip}
    ref, out = _produced(ref), _produced(out)
    if len(ref.tensors) != len(out.tensors) or any(a.shape != b.shape for a, b in zip(ref.tensors, out.tensors)):
        return {**NOT_COMPARED, "ok": False, "note": "compiled outputs differ in number or shape from eager"}
    tol, mult = TOLERANCE[dtype], MULTIPLIER[dtype]
    quick = None
    if callable(wide):
        quick = [_tensor_sums(a, b, None, tol) for a, b in zip(ref.tensors, out.tensors)]
        past = [not t["close"] and not t["odd"] for t in quick]  # non-finite values apart fail without a reference
        wide = wide() if any(past) else NOT_NEEDED if not any(t["odd"] for t in quick) else \
            "not run: non-finite values sit at different places (that fails the check by itself)"
    wide_ok = isinstance(wide, Produced) and [t.shape for t in wide.tensors] == [t.shape for t in ref.tensors]
    why_no_wide = wide if isinstance(wide, str) else None if wide_ok else "no float64 run of this call"
    max_abs, worst_rel, failing, judged = 0.0, 0.0, [], []
    for i, (name, a, b) in enumerate(zip(ref.names, ref.tensors, out.tensors)):
        t = quick[i] if quick is not None and not wide_ok else _tensor_sums(a, b, wide.tensors[i] if wide_ok
                                                                           else None, tol)
        max_abs = max(max_abs, t["max_abs"])
        rel = _ratio(t["diff_sq"], t["ref_sq"])
        worst_rel = max(worst_rel, rel)
        row = {"tensor": name, "rel_error": rel, "max_abs_error": t["max_abs"], "within_tolerance": t["close"]}
        if wide_ok:
            n = max(t["count"], 1)
            row |= {"compiled_rmse_vs_float64": (t["out_wide_sq"] / n) ** 0.5,
                    "eager_rmse_vs_float64": (t["ref_wide_sq"] / n) ** 0.5}
            row["allowed_rmse"] = mult * row["eager_rmse_vs_float64"] + tol / 10
        passed = not t["odd"] and (t["close"] or (
            wide_ok and row["compiled_rmse_vs_float64"] <= row["allowed_rmse"]) or (not wide_ok and rel <= tol))
        row["ok"] = passed
        judged.append(row)
        if not passed:
            failing.append(name)
    detail = {"compared": _what(ref.names), "tensors": len(judged), "failing": failing,
              "reference": "float64" if wide_ok else f"none: {why_no_wide}", "tolerance": tol,
              "multiplier": mult if wide_ok else None,
              "worst": max(judged, key=_badness, default=None)}
    return {"max_abs_error": max_abs, "rel_error": worst_rel, "ok": not failing, "note": _note(detail, dtype),
            "detail": detail}


def _produced(x) -> Produced:
    return x if isinstance(x, Produced) else Produced([f"output {i}" for i in range(len(x))], list(x))


def _ratio(num_sq: float, den_sq: float) -> float:
    return (num_sq ** 0.5) / (den_sq ** 0.5) if den_sq > 0 else (0.0 if num_sq == 0 else float("inf"))


def _badness(row: dict) -> tuple:
    spare = row.get("allowed_rmse")
    return (not row["ok"], (row.get("compiled_rmse_vs_float64", 0.0) / spare) if spare else row["rel_error"])


def _what(names: list[str]) -> str:
    grads = sum(n.startswith("grad ") for n in names)
    head = "the loss" if "loss" in names else count(len(names) - grads, "output")
    return f"{head} and {count(grads, 'parameter gradient')}" if grads else head


def _note(d: dict, dtype: str) -> str:
    where = (f"within {d['multiplier']:g}x eager's own error against a float64 run where past it"
             if d["reference"] == "float64" else "every tensor within it (no float64 run needed)"
             if d["reference"] == f"none: {NOT_NEEDED}" else f"{d['reference']}: relative error within the tolerance")
    head = f"{d['compared']} compared; tolerance {d['tolerance']:g} for {dtype}, {where}"
    if d["failing"]:
        return head + f"; {len(d['failing'])} of {d['tensors']} differ: " + ", ".join(d["failing"][:3])
    return head


def warm_kernels(device: torch.device) -> None:
    """Load the kernels compare() runs on a GPU (a tensor past HOST_COMPARE, with a float64 run beside it) by running
    it once on made-up values: a CUDA child loads each kernel at its first use (runner.child.prewarm)."""
    a = torch.linspace(0, 1, HOST_COMPARE + 1, device=device)
    _tensor_sums(a, a + 1e-6, a.double(), TOLERANCE["float32"])


def _tensor_sums(a: torch.Tensor, b: torch.Tensor, w: torch.Tensor | None, tol: float) -> dict:
    """One tensor's sums over its chunks, in float64 on `b`'s device (a small one on the host): squared differences
    (compiled - eager), squared eager, largest |difference|, whether all are within tol (allclose), and with the
    float64 run `w` both sides' squared distance from it. Places where either side is not finite are left out and
    must be alike (`odd`)."""
    if not (a.is_floating_point() or a.is_complex()):  # integer outputs (token ids, argmax): equal or not
        same = bool(torch.equal(a.to(b.device), b))
        return {"diff_sq": 0.0 if same else 1.0, "ref_sq": 1.0, "max_abs": 0.0 if same else float("inf"),
                "close": same, "odd": False, "count": a.numel(), "out_wide_sq": 0.0, "ref_wide_sq": 0.0}
    if a.is_complex():  # both parts compared (a cast to float64 would keep the real one alone)
        a, b = (torch.view_as_real(x.resolve_conj()) for x in (a, b))
        w = torch.view_as_real(w.resolve_conj()) if w is not None and w.is_complex() else w
    device = torch.device("cpu") if b.numel() <= HOST_COMPARE else b.device
    zero = torch.zeros((), dtype=torch.float64, device=device)
    sums = {k: zero for k in ("diff_sq", "ref_sq", "max_abs", "out_wide_sq", "ref_wide_sq", "excess")}
    odd = torch.zeros((), dtype=torch.bool, device=device)
    count = 0
    ws = w.reshape(-1).split(COMPARE_CHUNK) if w is not None else None
    for i, (a64, b64) in enumerate(zip(a.reshape(-1).split(COMPARE_CHUNK), b.reshape(-1).split(COMPARE_CHUNK))):
        a64, b64 = a64.to(device).double(), b64.to(device).double()
        finite = a64.isfinite() & b64.isfinite()
        same = (a64 == b64) | (a64.isnan() & b64.isnan())
        odd = odd | (~finite & ~same).any()
        d = torch.where(finite, a64 - b64, zero)
        ra = torch.where(finite, a64, zero)
        sums["diff_sq"] = sums["diff_sq"] + d.square().sum()
        sums["ref_sq"] = sums["ref_sq"] + ra.square().sum()
        if d.numel():
            sums["max_abs"] = torch.maximum(sums["max_abs"], d.abs().max())
            sums["excess"] = torch.maximum(sums["excess"], (d.abs() - tol - tol * ra.abs()).max())
        if ws is not None:
            w64 = ws[i].to(device).double()
            both = finite & w64.isfinite()
            sums["out_wide_sq"] = sums["out_wide_sq"] + torch.where(both, b64 - w64, zero).square().sum()
            sums["ref_wide_sq"] = sums["ref_wide_sq"] + torch.where(both, a64 - w64, zero).square().sum()
        count += int(b64.numel())
    got = {k: float(v) for k, v in sums.items()}  # one synchronisation per tensor
    return {**got, "close": got["excess"] <= 0, "odd": bool(odd), "count": count}
