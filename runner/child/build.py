"""Both sides of a job, built for the measurement protocol (runner.child.measure): the model twice from one seed (an eager
copy and a compiled copy, the same weights), seeded random inputs on the device and dtype, and the step each side
times (a forward under no_grad, or a training step). Runs inside the child process, never in the worker."""
from __future__ import annotations

import copy
import functools
import random
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from lab.spec import ExperimentSpec
from lab.timeline import Phases
from runner.child import prewarm
from runner.child.accuracy import tensors
from runner.child.capture import cudagraphs as cudagraphs_health
from runner.child.capture.introspect import GraphBreakLog
from runner.child.capture.trace import CompileTrace
from runner.child.rounds import ExperimentFailed
from runner.child.timing import CompileWatch, make_timer
from runner.zoo import ZooEntry, load_module

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
          "amp-bfloat16": torch.float32, "amp-float16": torch.float32}  # the weights' and inputs' dtype
# mixed precision: fp32 weights, the step under torch.autocast in this dtype (what AMP training means)
AUTOCAST = {"amp-bfloat16": torch.bfloat16, "amp-float16": torch.float16}
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")
# the layers whose eager call goes to the convolution library (cuDNN on a GPU): convolutions, batch norm, RNNs
CONV_LIBRARY_LAYERS = (torch.nn.modules.conv._ConvNd, torch.nn.modules.batchnorm._BatchNorm, torch.nn.RNNBase)


@dataclass
class Setup:
    """What every step works on: the spec, both sides' models and steps, the inputs, the clocks."""
    spec: ExperimentSpec
    entry: ZooEntry
    module: object
    device: torch.device
    dtype: torch.dtype
    training: bool
    cudagraphs: bool
    eager_model: torch.nn.Module
    compiled_base: torch.nn.Module
    eager_step: Callable
    compiled_step: Callable
    inputs: tuple
    timer: object
    watch: CompileWatch
    breaks: GraphBreakLog
    trace: CompileTrace
    phases: Phases
    # the model build's parts, seconds each, and where the weights were made (the host where the device refused)
    build_parts: dict = field(default_factory=dict)


def build(spec: ExperimentSpec, entry: ZooEntry, phases: Phases, trace: bool = True) -> Setup:
    """Both sides from one seed (same weights), the compiled one wrapped by torch.compile as the spec says; `trace`
    False (a follow-up process) captures no compile trace (runner.child.capture.trace): nothing of it is kept, and capturing it
    cost a warm first call 0.1-0.2 s of lab overhead on an H100."""
    dtype, training = DTYPES[spec.dtype], spec.task == "training"
    if spec.device != "cuda":
        device = _device(spec.device)
    else:  # its own phase: else the first tensor moved to the device pays it, unnamed; the driver's start with it
        with phases.phase("CUDA context"):  # (0.1-0.2 s on an H100: asking for the device count starts the driver)
            device = _device(spec.device)
            prewarm.cuda_context(device)  # what a child warmed ahead did already: then at once
    with phases.phase("model build"):
        return _build(spec, entry, phases, device, dtype, training, trace)


def _build(spec: ExperimentSpec, entry: ZooEntry, phases: Phases, device, dtype, training, trace_on: bool) -> Setup:
    breaks = GraphBreakLog()
    cudagraphs_health.listen()
    trace = CompileTrace(attach=trace_on)  # after GraphBreakLog: its set_logs resets torch's handlers (never ours)
    try:
        return _assemble(spec, entry, phases, device, dtype, training, breaks, trace)
    except BaseException:  # a build that fails leaves no handler on torch's trace (`--spawn inline`: the next job's)
        trace.close()
        raise


def _assemble(spec: ExperimentSpec, entry: ZooEntry, phases: Phases, device, dtype, training, breaks: GraphBreakLog,
              trace: CompileTrace) -> Setup:
    parts = _Parts(device)
    module = load_module(entry, spec.task)
    params = dict(spec.model_args)
    seed(0)
    parts.mark("setup")
    eager_model, where = build_on(device, module, params)
    parts.mark("weights")
    compiled_base = copy.deepcopy(eager_model)  # same weights on both sides
    parts.mark("copy")
    for m in (eager_model, compiled_base):
        m.to(device=device, dtype=dtype)
        m.train(training)
    parts.mark("to device and dtype")
    inputs = inputs_for(module, entry, spec, rounds_size(spec, entry), device, dtype)
    parts.mark("inputs")
    compile_fn = functools.partial(torch.compile, backend=spec.backend,
                                   mode=spec.mode if spec.backend == "inductor" else None,
                                   dynamic=spec.dynamic, fullgraph=spec.fullgraph)
    if spec.scope == "blocks":  # regional compilation: each repeated block, in place; the model stays eager
        compiled_model = compile_blocks(compiled_base, entry.info.blocks, compile_fn)
    elif hasattr(module, "compile"):
        compiled_model = module.compile(compiled_base, compile_fn, **params)
    else:
        compiled_model = compile_fn(compiled_base)
    cudagraphs = spec.device == "cuda" and (spec.mode in CUDAGRAPH_MODES or spec.backend == "cudagraphs")
    amp = AUTOCAST.get(spec.dtype)
    return Setup(spec=spec, entry=entry, module=module, device=device, dtype=dtype, training=training,
                 cudagraphs=cudagraphs, eager_model=eager_model, compiled_base=compiled_base,
                 eager_step=make_step(eager_model, eager_model.parameters(), training, mark_cudagraph_step=False,
                                      autocast=amp, device_type=device.type),
                 compiled_step=make_step(compiled_model, compiled_base.parameters(), training,
                                         mark_cudagraph_step=cudagraphs, autocast=amp, device_type=device.type),
                 inputs=inputs, timer=make_timer(spec.device), watch=CompileWatch(), breaks=breaks, trace=trace,
                 phases=phases, build_parts=parts.done(where))


class _Parts:
    """Seconds of each part of the model build, each ended once the device has finished it (the build is not timed
    work: a synchronisation here costs the lab microseconds and makes each part its own)."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.seconds: dict[str, float] = {}
        self._t = time.perf_counter()

    def mark(self, part: str) -> None:
        if self.cuda:
            torch.cuda.synchronize()
        now = time.perf_counter()
        self.seconds[part] = round(now - self._t, 4)
        self._t = now

    def done(self, weights_made: str) -> dict:
        self.mark("the compiled wrapper and steps")
        return {"weights_made": weights_made, "seconds": self.seconds}


def _device(name: str) -> torch.device:
    if name == "cuda":
        if not torch.cuda.is_available():
            raise ExperimentFailed("device cuda was asked for, but this worker's child sees no CUDA device")
        return torch.device("cuda", 0)  # the worker pins its GPU with CUDA_VISIBLE_DEVICES
    return torch.device("cpu")


def seed(n: int) -> None:
    random.seed(n)
    torch.manual_seed(n)
    try:
        import numpy as np

        np.random.seed(n)
    except ImportError:
        pass


def rounds_size(spec: ExperimentSpec, entry: ZooEntry) -> int:
    """The size the rounds run at: the batch, or a size dimension's value as given (`--arg seq_len=512`; the batch
    stays the spec's). The schedule's calls vary the size dimension (runner.child.measure). Before, a size-dimension
    model ran its rounds at seq_len = the batch size: hf:GPT2LMHeadModel bs 8 "seq 512" measured seq 8."""
    if entry.info.size_dim == "batch":
        return spec.batch_size
    return int(spec.model_args.get(entry.info.size_dim, spec.batch_size))


def inputs_for(module, entry: ZooEntry, spec: ExperimentSpec, size: int, device, dtype) -> tuple:
    """Seeded random inputs; `size` is the batch, or the model's SIZE_DIM (say seq_len)."""
    params = dict(spec.model_args)
    batch = size
    if entry.info.size_dim != "batch":
        params[entry.info.size_dim], batch = size, spec.batch_size
    seed(1)
    with torch.device(device):  # drawn where they are used: 2 x 10000 x 10000 randn on the host took 2 s
        raw = module.example_inputs(batch, **params)
    if isinstance(raw, torch.Tensor):
        raw = (raw,)
    return tuple(t.to(device=device, dtype=dtype) if t.is_floating_point() else t.to(device) for t in raw)


def make_step(model, parameters, training: bool, mark_cudagraph_step: bool, autocast: torch.dtype | None = None,
              device_type: str = "cpu") -> Callable:
    """One call of the thing being measured: a forward under no_grad, or forward+backward+SGD step. With
    `autocast` (AMP), the forward runs under torch.autocast in that dtype over fp32 weights; a float16
    training step scales its loss (GradScaler), as AMP training does."""
    optimizer = torch.optim.SGD(list(parameters), lr=1e-3) if training else None
    scaler = torch.amp.GradScaler(device_type) if training and autocast == torch.float16 else None

    def forward(inputs):
        if autocast is None:
            return model(*inputs)
        with torch.autocast(device_type, dtype=autocast):
            return model(*inputs)

    def step(inputs):
        if mark_cudagraph_step:  # tells CUDA-graph trees a new iteration begins (outputs may be reused)
            torch.compiler.cudagraph_mark_step_begin()
        if optimizer is None:
            with torch.no_grad():
                return forward(inputs)
        optimizer.zero_grad(set_to_none=True)
        loss = _loss(forward(inputs))
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return loss.detach()

    return step


def build_on(device: torch.device, module, params: dict) -> tuple[torch.nn.Module, str]:
    """The model, its weights initialised on the device it runs on (on the host, ResNet-18's took 0.4 s); a model
    whose construction needs the host (numpy on a parameter, say) is built there instead. With it, where its
    weights were made, and why not on the device where that failed."""
    if device.type == "cpu":
        return module.build(**params), "on the host (a CPU job)"
    try:
        with torch.device(device):
            model = module.build(**params)
        made = sorted({t.device.type for t in model.parameters()} - {device.type})
        # a model's own code may name the host for its weights (device="cpu"): then .to() moves them, as it says
        return model, "on the device" if not made else f"on {', '.join(made)} too: the model's own code put weights there"
    except Exception as e:  # built on the host, as a script would: the same model, its first numbers drawn there
        seed(0)
        return module.build(**params), f"on the host: building on the device raised {type(e).__name__}: {e}"[:300]


def compile_blocks(model: torch.nn.Module, containers: tuple[str, ...], compile_fn) -> torch.nn.Module:
    """PyTorch's regional compilation recipe: each block in the named containers replaced by its compiled
    self, so identical blocks share one compiled graph (dynamo inlines nn modules) and the model around
    them stays eager. Returns the model itself. (nn.Module.compile() set on a block was never called
    through here: a container calls the block's __call__, and on torch 2.13 that compiled nothing.)"""
    for name in containers:
        container = model.get_submodule(name)
        for child, block in list(container.named_children()):
            setattr(container, child, compile_fn(block))
    return model


def _loss(out) -> torch.Tensor:
    """At least float32 (a half-precision output's square sums overflow); a float64 run's stays float64."""
    if isinstance(out, torch.Tensor) and out.dim() == 0:  # the model's own loss (hf:, timm: with labels): as it is
        return _wide(out)
    return sum(_wide(t).pow(2).mean() for t in tensors(out))


def _wide(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.promote_types(t.dtype, torch.float32))


def timed_once(timer, step, inputs) -> tuple[float, object]:
    box = []
    seconds = timer.once(lambda: box.append(step(inputs)))
    return seconds, box[0]


def warm_libraries(device, dtype, model: torch.nn.Module | None = None) -> None:
    """Create the math libraries' handles, workspaces and thread pools before the eager first call,
    which would otherwise pay them alone (the compiled first call then finds them ready). The convolution
    library (cuDNN, oneDNN's convolutions) only for a model that has a layer that calls it: for the others it is
    lab overhead that no call of theirs would ever pay."""
    a = torch.randn(64, 64, device=device).to(dtype)
    (a @ a).sum().item()
    if model is not None and not any(isinstance(m, CONV_LIBRARY_LAYERS) for m in model.modules()):
        return
    try:
        x = torch.randn(2, 4, 16, 16, device=device).to(dtype)
        torch.nn.functional.conv2d(x, torch.randn(4, 4, 3, 3, device=device).to(dtype), padding=1).sum().item()
    except RuntimeError:  # no conv kernel for this dtype on this device: nothing to warm
        pass
