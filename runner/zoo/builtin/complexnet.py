"""ComplexModel from seed 004 (the modes experiment): multi-branch conv blocks with SE attention."""
import torch
import torch.nn.functional as F
from torch import nn

DESCRIPTION = "ComplexModel: multi-branch conv blocks, SE attention, dilated context (seed 004: modes)"
PARAMS = {"image_size": {"default": 224, "minimum": 96, "maximum": 1024,
                         "help": "input is batch x 3 x image_size x image_size; at least 96"},
          "num_classes": {"default": 10, "maximum": 100000}}


class ComplexBlock(nn.Module):
    def __init__(self, in_channels, out_channels, bottleneck_ratio=0.5):
        super().__init__()
        mid = int(out_channels * bottleneck_ratio)
        self.conv1 = nn.Conv2d(in_channels, mid, 1)
        self.bn1 = nn.BatchNorm2d(mid)
        self.branch1 = nn.Conv2d(mid, mid // 4, 3, padding=1)
        self.branch2 = nn.Conv2d(mid, mid // 4, 5, padding=2)
        self.branch3 = nn.Conv2d(mid, mid // 4, 7, padding=3)
        self.branch4 = nn.Conv2d(mid, mid // 4, 1)
        self.group_conv = nn.Conv2d(mid, mid, kernel_size=3, padding=1, groups=4)
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(mid, mid // 16, 1), nn.ReLU(inplace=True),
                                nn.Conv2d(mid // 16, mid, 1), nn.Sigmoid())
        self.conv2 = nn.Conv2d(mid, out_channels, 1)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.skip = nn.Sequential()
        if in_channels != out_channels:
            self.skip = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1), nn.BatchNorm2d(out_channels))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = torch.cat([self.branch1(out), self.branch2(out), self.branch3(out), self.branch4(out)], dim=1)
        out = F.relu(self.group_conv(out))
        out = out * self.se(out)
        out = self.bn2(self.conv2(out))
        out += self.skip(x)
        return F.relu(out)


class ComplexModel(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3), nn.BatchNorm2d(64),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
        self.block1 = ComplexBlock(64, 128)
        self.block2 = ComplexBlock(128, 256)
        self.block3 = ComplexBlock(256, 512)
        self.block4 = ComplexBlock(512, 1024)
        self.context_block = nn.Sequential(
            nn.Conv2d(1024, 512, kernel_size=1), nn.BatchNorm2d(512), nn.ReLU(inplace=True),
            nn.Conv2d(512, 512, kernel_size=3, padding=1, dilation=2), nn.BatchNorm2d(512), nn.ReLU(inplace=True))
        self.global_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(nn.Linear(512, 256), nn.ReLU(inplace=True), nn.Dropout(0.5),
                                nn.Linear(256, num_classes))

    def forward(self, x):
        x = self.stem(x)
        x = F.max_pool2d(self.block1(x), 2)
        x = F.max_pool2d(self.block2(x), 2)
        x = F.max_pool2d(self.block3(x), 2)
        x = self.context_block(self.block4(x))
        return self.fc(torch.flatten(self.global_pool(x), 1))


def build(image_size, num_classes):
    return ComplexModel(num_classes)


def example_inputs(batch_size, image_size, num_classes):
    return (torch.randn(batch_size, 3, image_size, image_size),)
