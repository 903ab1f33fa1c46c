"""What a worker publishes for one family member (`hf:GPT2LMHeadModel`, `timm:resnet50`): its name, description and
size parameter. Without torch or the families' packages: the listing child (runner.zoo.families) and the listing read
from the installed sources (runner.zoo.quick_listing) build the same entries."""
from __future__ import annotations

HF_DESCRIPTION = "Hugging Face transformers, {cls}: its default config, random weights"
# the heads whose inputs are token ids and whose labels the suite knows how to draw (runner.zoo.family_hf)
HF_HEADS = {"MODEL_FOR_CAUSAL_LM_MAPPING_NAMES": "tokens", "MODEL_FOR_MASKED_LM_MAPPING_NAMES": "tokens",
            "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES": "class",
            "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES": "token_class"}
SEQ_LEN = {"gpu": 512, "cpu": 64}  # the suite's common length on a GPU; a CPU-sized default where there is none
TIMM_DESCRIPTION = "timm {name}, random weights"
CPU_IMAGE = 64  # a CPU-sized default image where the worker has no GPU


def hf(cls: str, gpu: bool) -> dict:
    """A transformers class with its size parameter (a GPU's or a CPU's default length); any config field besides."""
    seq = SEQ_LEN["gpu" if gpu else "cpu"]
    return {"name": f"hf:{cls}", "description": HF_DESCRIPTION.format(cls=cls), "size_dim": "seq_len",
            "params": [{"name": "seq_len", "default": seq, "minimum": 1, "maximum": 131072,
                        "help": "tokens per sequence (the schedule can vary it)"}],
            "open_args": True}


def timm(name: str, default_size: int, gpu: bool) -> dict:
    """A timm model with its default input size (a CPU-sized one without a GPU)."""
    return {"name": f"timm:{name}", "description": TIMM_DESCRIPTION.format(name=name),
            "params": [{"name": "image_size", "default": default_size if gpu else CPU_IMAGE, "minimum": 16,
                        "maximum": 2048, "help": "input height and width"}]}
