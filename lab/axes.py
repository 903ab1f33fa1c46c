"""The swept axes of a sweep, declared once: what a sweep varies job by job (batch size and the compile
settings). The Submit form, the CLI's flags, a spec's validation, Compare's matching, the Results frame's
columns and the series labels all derive from AXES. No torch, no streamlit, no SQLAlchemy.

The values of dynamic and fullgraph are lab.checks' TRI and BOOL names.
"""
from __future__ import annotations

from dataclasses import dataclass

from lab.checks import BOOL, TRI


@dataclass(frozen=True)
class Axis:
    """One swept axis: the ExperimentSpec field (one job's value) and the SweepRequest field (the list)."""

    field: str  # ExperimentSpec field, and the Results frame's column
    plural: str  # SweepRequest field
    flag: str  # CLI flag (repeat it, or give a comma list, for a sweep)
    label: str  # the form's label (the sweep's list)
    title: str  # one value's name: a filter's and a table's
    values: tuple[str, ...] = ()  # the allowed values as a person types them; () = any integer (batch size)
    help: str = ""  # the CLI's
    form_help: str = ""  # the Submit form's

    def part(self, text: str) -> str:
        """How one value reads in a series label: "dynamic=true", "reduce-overhead", "bs 8"."""
        if self.field == "batch_size":
            return f"bs {text}"
        return f"{self.field}={text}" if self.field in ("dynamic", "fullgraph", "scope") else text


BACKENDS = ("inductor", "aot_eager", "cudagraphs", "eager")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

AXES = (
    Axis("batch_size", "batch_sizes", "--batch", "Batch sizes", "Batch size",
         help="batch size (repeat, or 8,16,32, for a sweep)"),
    Axis("backend", "backends", "--backend", "Backends", "Backend", BACKENDS, help="torch.compile backend (repeat for a sweep)"),
    Axis("mode", "modes", "--mode", "Modes", "Mode", MODES,
         help="inductor mode (repeat for a sweep); other backends run once with mode default",
         form_help="Modes apply to the inductor backend; other backends run once with mode default"),
    Axis("dynamic", "dynamics", "--dynamic", "Dynamic", "Dynamic", tuple(TRI), help="none, true or false (repeat for a sweep)",
         form_help="torch.compile(dynamic=None/True/False)"),
    Axis("fullgraph", "fullgraphs", "--fullgraph", "Fullgraph", "Fullgraph", tuple(BOOL),
         help="true or false (repeat for a sweep)", form_help="fullgraph=true turns a graph break into an error"),
    Axis("scope", "scopes", "--scope", "Compile scope", "Scope", ("model", "blocks"),
         help="model: compile the whole model; blocks: compile each repeated block the model file names (BLOCKS), "
              "the regional compilation recipe (repeat for a sweep)",
         form_help="blocks: compile each repeated block (BLOCKS in the model file) instead of the whole model: "
                   "less compile time, maybe less speedup"),
)
# CUDA graphs need CUDA: on any other device these modes are the same compile as the mode they fold into
# (reduce-overhead is default plus CUDA graphs; max-autotune is max-autotune-no-cudagraphs plus CUDA graphs). A sweep
# on such a device keeps one job for the pair, and Results shows results stored under the other name with it.
FOLD_WITHOUT_CUDA = {"reduce-overhead": "default", "max-autotune-no-cudagraphs": "max-autotune"}
GRAPH_DEVICES = ("cuda",)


def folded_mode(mode: str, device: str) -> str:
    """The mode a job really compiles with on `device`: reduce-overhead is default off CUDA, and
    max-autotune-no-cudagraphs is max-autotune."""
    return mode if device in GRAPH_DEVICES else FOLD_WITHOUT_CUDA.get(mode, mode)


def fold_note(mode: str, device: str) -> str:
    """Why `mode` is shown (or run) as another mode on `device`; "" when it is not."""
    into = folded_mode(mode, device)
    if into == mode:
        return ""
    return f"{mode} on {device} is {into}: the same compile, since CUDA graphs need CUDA"


BY_FIELD = {a.field: a for a in AXES} | {a.plural: a for a in AXES}
COMPILE_AXES = tuple(a for a in AXES if a.field != "batch_size")
COMPILE_FIELDS = tuple(a.field for a in COMPILE_AXES)  # backend, mode, dynamic, fullgraph
FIELDS = tuple(a.field for a in AXES)  # batch_size first: the workload, then how it is compiled
