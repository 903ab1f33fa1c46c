"""torchvision's ResNet-18 (random weights; nothing is downloaded)."""
import torch

DESCRIPTION = "torchvision ResNet-18, random weights (seed 003's example)"
PARAMS = {"image_size": {"default": 224, "minimum": 32, "maximum": 1024}}
REQUIRES = ("torchvision",)
BLOCKS = ("layer1", "layer2", "layer3", "layer4")  # each stage's BasicBlocks, compiled one by one


def build(image_size):
    import torchvision

    return torchvision.models.resnet18(weights=None)


def example_inputs(batch_size, image_size):
    return (torch.randn(batch_size, 3, image_size, image_size),)
