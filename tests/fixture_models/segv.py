"""Test fixture: the child dies by SIGSEGV while building the model."""
import ctypes

import torch

DESCRIPTION = "fixture: segfaults in build"
PARAMS = {}


def build():
    ctypes.string_at(0)  # reads address 0: SIGSEGV
    return torch.nn.Identity()


def example_inputs(batch_size):
    return (torch.randn(batch_size, 4),)
