"""The feed-forward activations, by their config.json names, each computed as transformers' ACT2FN does."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


def _gelu_tanh_formula(x: Tensor) -> Tensor:
    # transformers' "gelu_new" spells the tanh approximation out; keep the same arithmetic order for parity.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def _gelu_fast(x: Tensor) -> Tensor:
    return 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))


ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_new": _gelu_tanh_formula,
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_fast": _gelu_fast,
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": torch.tanh,
    "gelu_accurate": _gelu_tanh_formula,  # transformers' spells the same formula with its constant precomputed
    "gelu_python": lambda x: x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0))),
    "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
    "mish": F.mish,
    "linear": lambda x: x,
}
