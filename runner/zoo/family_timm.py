"""timm models by name (`timm:resnet50`): `pretrained=False` (random weights, nothing downloaded), the model's own
default input size (`--arg image_size=N` to change it). Training: cross-entropy against random class labels, as
PyTorch's TIMM compiler suite does. Imported in the child (and the worker's listing child) only."""
from __future__ import annotations

import torch

from runner.zoo import family_entries

REQUIRES = ("timm", "torchvision")
SIZE_DIM = "batch"


def names() -> list[str]:
    import timm

    return sorted(timm.list_models())


def default_size(member: str) -> int:
    import timm

    cfg = timm.models.get_pretrained_cfg(member) if hasattr(timm.models, "get_pretrained_cfg") else None
    size = getattr(cfg, "input_size", None) or (3, 224, 224)
    return int(size[-1])


class Classify(torch.nn.Module):
    """images -> logits; with labels, the cross-entropy loss (the training step's)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, images, labels=None):
        logits = self.model(images)
        if labels is None:
            return logits
        return torch.nn.functional.cross_entropy(logits, labels)


def build(member: str, task: str, image_size: int, **_):
    import timm

    if image_size != default_size(member):
        try:  # models with a fixed grid (ViT) take the size; convolutional ones take any input
            return Classify(timm.create_model(member, pretrained=False, img_size=image_size))
        except TypeError:
            pass
    return Classify(timm.create_model(member, pretrained=False))


def example_inputs(member: str, task: str, batch_size: int, image_size: int, **_):
    images = torch.randn(batch_size, 3, image_size, image_size)
    if task != "training":
        return (images,)
    return images, torch.randint(0, _classes(member), (batch_size,))


def _classes(member: str) -> int:
    import timm

    cfg = timm.models.get_pretrained_cfg(member)
    return int(getattr(cfg, "num_classes", None) or 1000)


def listing(gpu: bool) -> list[dict]:
    """What a worker publishes: every name with its default input size (a CPU-sized one without a GPU)."""
    return [family_entries.timm(name, default_size(name) if gpu else family_entries.CPU_IMAGE, gpu)
            for name in names()]
