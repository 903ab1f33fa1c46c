"""A small Transformer encoder; the sequence length is its dynamic dimension."""
import torch
from torch import nn

DESCRIPTION = "Transformer encoder (d_model, layers, heads); the schedule varies seq_len"
PARAMS = {"seq_len": {"default": 128, "maximum": 65536},
          "d_model": {"default": 256, "minimum": 8, "maximum": 16384},
          "layers": {"default": 2, "maximum": 96},
          "heads": {"default": 4, "maximum": 128}}
SIZE_DIM = "seq_len"
BLOCKS = "layers"  # nn.TransformerEncoder.layers: the encoder layers, compiled one by one with --scope blocks


def build(seq_len, d_model, layers, heads):
    layer = nn.TransformerEncoderLayer(d_model=d_model, nhead=heads, dim_feedforward=4 * d_model,
                                       dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)


def example_inputs(batch_size, seq_len, d_model, layers, heads):
    return (torch.randn(batch_size, seq_len, d_model),)
