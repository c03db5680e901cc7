"""Linear layers whose weights live only in oneDNN's blocked ("packed") layout, for CPU inference.

Why: PyTorch's default fp32 matmul on CPU (MKL `sgemm`) re-packs the whole weight matrix into its own blocked
layout on every call. For an 8-token input that packing, not the arithmetic, is most of the forward pass:
bert-base reads and rewrites 340 MB of encoder weights per call. oneDNN can take a weight packed once, ahead of
time, and its kernels then stream it straight from memory (docs/benchmarks.md has the measurements).

The packed tensor *replaces* the dense weight, so memory does not grow; the dense matrix is recovered exactly
(`to_dense()` is a lossless reorder) whenever something asks for `weight` or the state dict. Results are still
fp32, but the summation order inside each dot product differs from MKL's, so outputs move in the last bits
(about 1e-6 on bert-base hidden states after twelve layers; the parity tests bound it at 1e-5).

Shapes: x (..., in_features) -> (..., out_features); the packed weight reports (out_features, in_features).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .activations import ACTIVATIONS

# oneDNN picks its blocked layout for an expected row count; measured on bert-base (docs/benchmarks.md), the
# choice barely matters for 8..512 rows once it is above 1, so one packing serves every sentence length.
_PACKING_ROWS_HINT = 128


def packing_available() -> bool:
    """True where this torch build has the oneDNN ops the packed path needs (all x86/ARM CPU wheels do)."""
    return (
        torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    )


class PackedLinear(nn.Module):
    """Drop-in for an eval-mode `nn.Linear` on CPU fp32; `weight` and the state dict stay dense and HF-named."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        # Not a parameter or buffer: `.to()`, `state_dict()` and optimisers must never see the opaque layout.
        self.packed = torch.ops.mkldnn._reorder_linear_weight(
            linear.weight.detach().contiguous(), _PACKING_ROWS_HINT
        )
        self.bias = linear.bias

    @property
    def weight(self) -> Tensor:
        """The dense (out_features, in_features) weight, rebuilt exactly from the packed one (a fresh copy)."""
        return self.packed.to_dense()

    def forward(self, x: Tensor) -> Tensor:
        if torch.is_grad_enabled() and (
            x.requires_grad or (self.bias is not None and self.bias.requires_grad)
        ):
            # The packed op has no backward: a gradient-taking caller gets the dense arithmetic instead.
            return F.linear(x, self.weight, self.bias)
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")

    def forward_gelu(self, x: Tensor, approximate: str = "none") -> Tensor:
        """gelu(linear(x)) in one oneDNN call: the (M, out) result is written once, not twice. Inference only.
        approximate="none" (BERT's erf form) is bit-identical to F.gelu applied afterwards; "tanh" (ALBERT's
        gelu_new) is the same function rounded its own way, within ~2e-7 (tests/bert_core/test_packed.py)."""
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "gelu", [], approximate)

    def forward_add(self, x: Tensor, residual: Tensor) -> Tensor:
        """linear(x) + residual in one oneDNN call (inference only); residual has the output's shape."""
        return torch.ops.mkldnn._linear_pointwise.binary(x, residual, self.packed, self.bias, "add")

    def to_linear(self) -> nn.Linear:
        linear = nn.Linear(self.in_features, self.out_features, bias=self.bias is not None, device="meta")
        linear.weight = nn.Parameter(self.weight)
        if self.bias is not None:
            linear.bias = self.bias
        return linear

    # Pickling and deepcopy go through the dense weight: oneDNN's opaque tensors have no storage to copy.
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["packed"] = self.weight
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.packed = torch.ops.mkldnn._reorder_linear_weight(self.packed, _PACKING_ROWS_HINT)

    def _apply(self, fn, recurse=True):
        raise RuntimeError(
            "a packed layer cannot be moved or cast; call unpack() on the network first "
            "(heads.Network does that itself in .to(), .half(), .cuda(), ...)"
        )

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        destination[prefix + "weight"] = self.weight  # first, as nn.Linear orders its keys
        super()._save_to_state_dict(destination, prefix, keep_vars)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        key = prefix + "weight"
        if key in state_dict:
            weight = state_dict[key]
            if tuple(weight.shape) != (self.out_features, self.in_features):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {tuple(weight.shape)}, "
                    f"the packed layer expects {(self.out_features, self.in_features)}"
                )
            else:
                self.packed = torch.ops.mkldnn._reorder_linear_weight(
                    weight.detach().to(torch.float32).contiguous(), _PACKING_ROWS_HINT
                )
        elif strict:
            missing.append(key)
        rest = {k: v for k, v in state_dict.items() if k != key}
        super()._load_from_state_dict(rest, prefix, local_metadata, strict, missing, unexpected, errors)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, packed"


# Config names of GELU's tanh approximation; transformers spells the same function three ways.
_TANH_GELUS = frozenset({"gelu_new", "gelu_pytorch_tanh", "gelu_fast"})


def linear(
    layer: nn.Linear | PackedLinear,
    x: Tensor,
    *,
    residual: Tensor | None = None,
    activation: str | None = None,
) -> Tensor:
    """x W^T + b, plus residual (M, out) or through activation (a config `hidden_act` name), for x (M, in)
    -> (M, out). The encoder's one way to run a Linear, whichever layout it has.

    A plain Linear runs the reference's own calls (addmm, then add_; then the activation): bit-identical to
    transformers. A packed one runs oneDNN on its pre-packed weight, with the residual add and the GELU fused
    into the matmul call (the add and BERT's erf GELU bit-identical to doing them afterwards, the tanh GELU
    within ~2e-7; tests/bert_core/test_packed.py).
    """
    if residual is not None and activation is not None:
        raise ValueError("linear() takes a residual or an activation, not both")
    if isinstance(layer, PackedLinear) and not torch.is_grad_enabled():
        if residual is not None:
            return layer.forward_add(x, residual)
        if activation == "gelu":
            return layer.forward_gelu(x)
        if activation in _TANH_GELUS:
            # ALBERT's FFN: 37 % faster than the matmul and then the formula at 512 tokens (8.9 vs 14.1 ms)
            return layer.forward_gelu(x, "tanh")
        out = layer(x)
    elif isinstance(layer, PackedLinear):
        out = layer(x)  # under autograd: its dense fallback
        out = out if residual is None else out + residual
    elif layer.bias is None:
        out = F.linear(x, layer.weight)
        out = out if residual is None else out.add_(residual)
    else:
        out = torch.addmm(layer.bias, x, layer.weight.t())
        out = out if residual is None else out.add_(residual)
    return out if activation is None else ACTIVATIONS[activation](out)


def _slots(network: nn.Module) -> list[tuple[nn.Module, str]]:
    # (parent, attribute) pairs rather than the children themselves: holding every old layer in a list while
    # swapping would keep all the dense weights alive until the end, doubling peak memory.
    return [(parent, name) for parent in network.modules() for name, _ in parent.named_children()]


def pack_linears(network: nn.Module, skip: frozenset[nn.Module] = frozenset()) -> int:
    """Replace every fp32 CPU `nn.Linear` in `network` (those in `skip` excepted) by a `PackedLinear`, one at
    a time. Peak memory grows by one matrix, not by the model, provided nothing else holds the dense weights.
    Returns how many layers were packed (0 where oneDNN is unavailable).
    """
    if not packing_available():
        return 0
    count = 0
    for parent, name in _slots(network):
        child = getattr(parent, name)
        if (
            type(child) is not nn.Linear
            or child in skip
            or child.weight.device.type != "cpu"
            or child.weight.dtype != torch.float32
        ):
            continue
        setattr(parent, name, PackedLinear(child))
        del child
        count += 1
    return count


def unpack_linears(network: nn.Module) -> int:
    """Turn every `PackedLinear` back into a plain `nn.Linear` holding the identical dense weight."""
    count = 0
    for parent, name in _slots(network):
        child = getattr(parent, name)
        if isinstance(child, PackedLinear):
            setattr(parent, name, child.to_linear())
            count += 1
    return count
