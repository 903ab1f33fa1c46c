"""Presets: the seed notes' experiments as Submit-form values (FormValues fields), one click each, on cuda where a
live worker offers it, else at the sizes a CPU finishes in minutes (the GPU sizes one click away)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Preset:
    title: str
    question: str  # what the seed asks, and where the dashboard answers it
    values: dict = field(default_factory=dict)
    cpu: dict = field(default_factory=dict)  # the values a CPU runs instead (params merge into the GPU's)

    def form_values(self, gpu_sizes: bool) -> dict:
        """The form's values: the seed's (GPU) sizes, or the CPU's in their place."""
        if gpu_sizes or not self.cpu:
            return dict(self.values)
        params = {**self.values.get("params", {}), **self.cpu.get("params", {})}
        return {**self.values, **self.cpu, **({"params": params} if params else {})}

    def scaled(self) -> list[str]:
        """What the CPU sizes change, as "image_size 224 → 64", for the form's note."""
        out = []
        for name, value in self.cpu.items():
            if name == "config":  # a Hugging Face model's config fields (a smaller model on the CPU)
                out.append(f"config {value}")
            elif name == "params":
                out += [f"{k} {self.values.get('params', {}).get(k, '?')} → {v}" for k, v in value.items()]
            else:
                out.append(f"{WORDS.get(name, name)} {self.values.get(name, '?')} → {value}")
        return out


WORDS = {"batch_sizes": "batch", "timeout_s": "timeout (s)"}


PRESETS: dict[str, Preset] = {
    "static-vs-dynamic": Preset(
        "static vs dynamic with batch 32→64",
        "Seed 004: compiled for batch 32, then called with 64. Does dynamic=false recompile where "
        "dynamic=true does not, and what does each cost? See Results → recompile timeline.",
        {"model": "simplenet", "batch_sizes": "32", "dynamics": ["false", "true"], "schedule": "32, 64",
         "modes": ["default"], "backends": ["inductor"], "fullgraphs": ["false"], "name": "static vs dynamic 32→64"}),
    "modes": Preset(
        "modes on ComplexModel",
        "Seed 004: default vs reduce-overhead vs max-autotune on ComplexModel (batch 32, 224×224). "
        "Compare warmup cost with steady-state speedup and the break-even call count.",
        {"model": "complexnet", "batch_sizes": "32", "params": {"image_size": 224},
         "modes": ["default", "reduce-overhead", "max-autotune"], "backends": ["inductor"], "dynamics": ["none"],
         # max-autotune's cold first call takes many minutes even at 96 px (docs/dashboard-internals.md): an hour
         "fullgraphs": ["false"], "timeout_s": 3600, "name": "modes on ComplexModel"},
        cpu={"batch_sizes": "8", "params": {"image_size": 96}}),  # 96: complexnet's smallest
    "whole-vs-functions": Preset(
        "whole model vs function-level",
        "Seed 004: torch.compile the whole LocalOptimizedNetwork, or only its two heavy functions "
        "(max-autotune, batch 16). Two sweeps, one per scope: put them side by side on Compare.",
        {"model": "localopt", "batch_sizes": "16", "params": {"scope": ["model", "functions"], "image_size": 224},
         "modes": ["max-autotune"], "backends": ["inductor"], "dynamics": ["none"], "fullgraphs": ["false"],
         "name": "whole model vs function-level"},
        cpu={"batch_sizes": "4", "params": {"image_size": 64}}),
    "fullgraph-break": Preset(
        "fullgraph on a graph break",
        "Seed 004: ConvNetMix picks its classifier head with numpy's RNG, a graph break. fullgraph=true "
        "fails and names the line; fullgraph=false runs as several graphs.",
        {"model": "convnetmix", "batch_sizes": "32", "fullgraphs": ["false", "true"], "modes": ["default"],
         "backends": ["inductor"], "dynamics": ["none"], "name": "fullgraph on a graph break"},
        # each head the RNG picks is one more graph to compile (5 at the seed's size): 495-747 s on 2 CPU cores
        cpu={"batch_sizes": "8", "params": {"width": 8, "heads": 2}}),
    "sincos-first-call": Preset(
        "sin+cos first call vs second call vs eager",
        "Seed 001: sin(x)+cos(y) on 10000×10000 tensors. The first compiled call pays for compiling, the "
        "second is fast: Results → warmup cost shows eager first, compiled first and compiled second call.",
        {"model": "sincos", "batch_sizes": "10000", "params": {"width": 10000}, "modes": ["default"],
         "backends": ["inductor"], "dynamics": ["none"], "fullgraphs": ["false"],
         "name": "sin+cos first vs second call"},
        cpu={"batch_sizes": "1000", "params": {"width": 1000}}),
    # the seeds' questions on real models (Hugging Face and timm, random weights): offered where a worker has them
    "real-lm": Preset(
        "a real LM: GPT-2 small",
        "GPT-2 small (Hugging Face transformers, its default config, random weights) at sequence 512, batch 8: "
        "default vs reduce-overhead vs max-autotune. Set Task to training for the training step.",
        {"model": "hf:GPT2LMHeadModel", "batch_sizes": "8", "params": {"seq_len": 512},
         "modes": ["default", "reduce-overhead", "max-autotune"], "backends": ["inductor"], "dynamics": ["none"],
         "fullgraphs": ["false"], "timeout_s": 3600, "name": "a real LM: GPT-2 small"},
        cpu={"batch_sizes": "2", "params": {"seq_len": 64}, "config": "n_layer=2"}),
    "real-vision": Preset(
        "a real vision backbone: ResNet-50",
        "timm's resnet50 (random weights) at batch 32, 224 px: default vs reduce-overhead vs max-autotune. The "
        "same for a transformer backbone: pick timm:vit_base_patch16_224 as the model.",
        {"model": "timm:resnet50", "batch_sizes": "32", "params": {"image_size": 224},
         "modes": ["default", "reduce-overhead", "max-autotune"], "backends": ["inductor"], "dynamics": ["none"],
         "fullgraphs": ["false"], "timeout_s": 3600, "name": "a real vision backbone: ResNet-50"},
        cpu={"batch_sizes": "4", "params": {"image_size": 64}}),
}
