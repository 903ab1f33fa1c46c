"""Hugging Face `transformers` models by class name (`hf:GPT2LMHeadModel`): the class's default config, random
weights, nothing downloaded; inputs as PyTorch's HuggingFace compiler suite makes them (token ids of `seq_len`,
labels for training, dropout off, no KV cache). Config fields are set with `--arg FIELD=VALUE`
(`--arg num_hidden_layers=4`). Imported in the child (and the worker's listing child) only."""
from __future__ import annotations

import torch

from runner.zoo import family_entries
from runner.zoo.family_entries import HF_HEADS as HEADS

REQUIRES = ("transformers",)
SIZE_DIM = "seq_len"
KEPT = frozenset({"seq_len"})  # the size parameter; every other argument is a config field


def names() -> dict[str, str]:
    """Class name -> how its labels are drawn, from transformers' own auto mappings (no model module imported)."""
    from transformers.models.auto import modeling_auto

    out: dict[str, str] = {}
    for mapping, labels in HEADS.items():
        for cls in getattr(modeling_auto, mapping, {}).values():
            if isinstance(cls, str):
                out.setdefault(cls, labels)
    return dict(sorted(out.items()))


def _labels_kind(cls_name: str) -> str:
    return names().get(cls_name, "tokens")


def config_for(cls_name: str, overrides: dict):
    """The class's default config with the overrides cast to each field's type, dropout off, no cache."""
    import transformers

    cls = getattr(transformers, cls_name, None)
    if cls is None:
        raise ValueError(f"transformers {transformers.__version__} has no class {cls_name}")
    config = cls.config_class()
    for key, raw in overrides.items():
        if key in KEPT:
            continue
        if not hasattr(config, key):
            raise ValueError(f"--arg {key}: {type(config).__name__} has no field {key!r}")
        config_set(config, key, raw)
    for key, value in config.to_dict().items():  # dropout off, as the suite runs them
        if isinstance(value, float) and not isinstance(value, bool) and ("dropout" in key or key.endswith("_pdrop")):
            setattr(config, key, 0.0)
    if hasattr(config, "use_cache"):
        config.use_cache = False
    if getattr(config, "use_pretrained_backbone", False):
        raise ValueError(f"{cls_name}'s config loads a pretrained backbone (a download): "
                         "set --arg use_pretrained_backbone=false")
    return cls, config


def config_set(config, key: str, raw) -> None:
    current = getattr(config, key)
    value = raw
    if isinstance(raw, str):
        text = raw.strip()
        if isinstance(current, bool):
            if text.lower() not in ("true", "false"):
                raise ValueError(f"--arg {key}: expected true or false, got {raw!r}")
            value = text.lower() == "true"
        elif isinstance(current, int):
            value = int(text)
        elif isinstance(current, float):
            value = float(text)
    setattr(config, key, value)


class Wrapped(torch.nn.Module):
    """The model called as the suite calls it (input_ids, labels): the loss when labels are given, else the logits."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, labels=None):
        out = self.model(input_ids=input_ids, labels=labels)
        if labels is not None:
            return out.loss
        return out.logits if hasattr(out, "logits") else out[0]


def build(member: str, task: str, seq_len: int, **overrides):
    cls, config = config_for(member, overrides)
    return Wrapped(cls(config))


def example_inputs(member: str, task: str, batch_size: int, seq_len: int, **overrides):
    _, config = config_for(member, overrides)
    vocab = int(getattr(config, "vocab_size", 30522))
    ids = torch.randint(0, vocab, (batch_size, seq_len))
    if task != "training":
        return (ids,)
    kind = _labels_kind(member)
    if kind == "class":
        labels = torch.randint(0, int(getattr(config, "num_labels", 2)), (batch_size,))
    elif kind == "token_class":
        labels = torch.randint(0, int(getattr(config, "num_labels", 2)), (batch_size, seq_len))
    else:
        labels = torch.randint(0, vocab, (batch_size, seq_len))
    return ids, labels


def listing(gpu: bool) -> list[dict]:
    """What a worker publishes: each class with its size parameter (a GPU's or a CPU's default length)."""
    return [family_entries.hf(cls, gpu) for cls in names()]
