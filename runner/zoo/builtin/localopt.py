"""LocalOptimizedNetwork from seed 004: compile the whole model, or only its two heavy functions."""
import torch
import torch.nn.functional as F
from torch import nn

DESCRIPTION = "LocalOptimizedNetwork: whole-model vs function-level compile (seed 004)"
PARAMS = {"image_size": {"default": 224, "minimum": 4, "maximum": 2048},
          "scope": {"default": "model", "choices": ["model", "functions"],
                    "help": "model: torch.compile the module; functions: only complex_activation and "
                            "feature_enhancement"}}


def complex_activation(x):
    a = torch.sin(x)
    b = torch.pow(x, 2) * torch.tanh(x)
    c = torch.exp(-torch.abs(x))
    d = torch.sigmoid(x) * torch.log(torch.clamp(x.abs(), min=1e-10))
    return a + b - c + d


def feature_enhancement(x):
    channel_weight = torch.sigmoid(F.adaptive_avg_pool2d(x, 1) * 3)
    spatial_avg = torch.mean(x, dim=1, keepdim=True)
    spatial_max, _ = torch.max(x, dim=1, keepdim=True)
    spatial_attn = torch.sigmoid(torch.cat([spatial_avg, spatial_max], dim=1))
    kernel = torch.ones(1, 2, 3, 3, device=x.device, dtype=x.dtype)
    spatial_weight = torch.sigmoid(F.conv2d(spatial_attn, kernel, padding=1))
    return x * channel_weight * spatial_weight


class LocalOptimizedNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(64)
        self.conv2 = nn.Conv2d(64, 128, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm2d(128)
        self.conv3 = nn.Conv2d(128, 128, kernel_size=3, padding=1)
        self.bn3 = nn.BatchNorm2d(128)
        self.conv4 = nn.Conv2d(128, 256, kernel_size=3, padding=1)
        self.bn4 = nn.BatchNorm2d(256)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(256, 10)
        self.enhance_features = feature_enhancement
        self.activation = complex_activation

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.activation(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        x = self.enhance_features(x)
        x = F.relu(self.bn4(self.conv4(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def build(image_size, scope):
    return LocalOptimizedNetwork()


def example_inputs(batch_size, image_size, scope):
    return (torch.randn(batch_size, 3, image_size, image_size),)


def compile(module, compile_fn, image_size, scope):
    if scope == "functions":  # the seed's "function-level" variant: the module itself stays eager
        module.activation = compile_fn(complex_activation)
        module.enhance_features = compile_fn(feature_enhancement)
        return module
    return compile_fn(module)
