"""The Submit page's model list in the order a person looks for them: the zoo's files first, then the models
PyTorch's compiler suites measure (HuggingFace, TIMM), then the rest by name; a search keeps that order."""
from __future__ import annotations

# from the compiler suites' model lists (torchbench's huggingface and timm_models): the ones labs ask about first
SUITES = ("hf:GPT2LMHeadModel", "hf:BertForMaskedLM", "hf:LlamaForCausalLM", "hf:RobertaForMaskedLM",
          "hf:DistilBertForMaskedLM", "hf:AlbertForMaskedLM", "hf:MistralForCausalLM", "hf:OPTForCausalLM",
          "timm:resnet50", "timm:vit_base_patch16_224", "timm:convnext_base", "timm:deit_base_distilled_patch16_224",
          "timm:efficientnet_b0", "timm:mobilenetv3_large_100", "timm:swin_base_patch4_window7_224",
          "timm:beit_base_patch16_224", "timm:regnety_032")


def ordered(names) -> list[str]:
    """Files first (sorted), then the suites' models this lab offers, then the rest of each family, sorted."""
    names = set(names)
    files = sorted(n for n in names if ":" not in n)
    suites = [n for n in SUITES if n in names]
    rest = sorted(names - set(files) - set(suites))
    return files + suites + rest


def label(name: str) -> str:
    """The picker's text for a model: a family member by its own name first ("vit_base_patch16_224 · timm"), plain
    text (a worker's names are never markup)."""
    family, sep, member = name.partition(":")
    return f"{member} · {family}" if sep and family in ("hf", "timm") else name
