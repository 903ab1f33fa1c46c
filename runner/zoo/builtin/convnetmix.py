"""ConvNetMix from seed 004: multi-scale conv features and a classifier head picked by numpy's RNG.

The numpy-random head choice is data-dependent control flow: a graph break. With fullgraph=True the
compile fails and names that line; without it the model runs as several graphs."""
import numpy as np
import torch
from torch import nn

DESCRIPTION = "ConvNetMix: numpy-random choice of classifier head, a graph break (seed 004)"
PARAMS = {"width": {"default": 32, "minimum": 4, "maximum": 512,
                    "help": "channels of the first MixBlock (the seed: 32); input is 64x64"},
          "heads": {"default": 5, "minimum": 1, "maximum": 64}}
STOCHASTIC = True  # eager and compiled draw the head from different generators


class MixBlock(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()

        def branch(k):
            return nn.Sequential(nn.Conv2d(in_channels, out_channels, kernel_size=k, padding=k // 2),
                                 nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True),
                                 nn.MaxPool2d(kernel_size=2, stride=2))

        self.channel1, self.channel2, self.channel3, self.channel4 = branch(1), branch(3), branch(5), branch(7)
        self.fusion = nn.Sequential(nn.Conv2d(out_channels * 4, out_channels, kernel_size=1),
                                    nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True))

    def forward(self, x):
        x_cat = torch.cat([self.channel1(x), self.channel2(x), self.channel3(x), self.channel4(x)], dim=1)
        return self.fusion(x_cat)


class ConvNetMix(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.features = nn.Sequential(MixBlock(3, width), MixBlock(width, 2 * width), MixBlock(2 * width, 4 * width))
        self.classifiers = nn.ModuleList([
            nn.Sequential(nn.Dropout(0.5), nn.Linear(4 * width * 8 * 8, 512), nn.BatchNorm1d(512),
                          nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(512, 10))
            for _ in range(heads)])

    def forward(self, x):
        x = torch.flatten(self.features(x), 1)
        return self.classifiers[np.random.randint(0, len(self.classifiers))](x)


def build(width, heads):
    return ConvNetMix(width, heads)


def example_inputs(batch_size, width, heads):
    return (torch.randn(batch_size, 3, 64, 64),)
