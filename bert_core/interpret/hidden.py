"""Token vectors layer by layer: how long they are, how much each layer turns them, how close each is to its
final form, and a 2-D map of all tokens at one layer (principal components).

Torch-free: works on an `Analysis` or `Vectors` (anything with `hidden_states` (L + 1, S, H)).

Dimensions: L = layers, S = sequence length, H = hidden size, P = tokens kept for the PCA.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..results import Analysis, Vectors


@dataclass(frozen=True)
class LayerTrajectory:
    """Per layer 0..L (0 = the embedding output) and token, each (L + 1, S) float64."""

    norms: np.ndarray  # Euclidean length of the token's vector
    cosine_to_previous: np.ndarray  # cosine to the same token one layer down; NaN at layer 0, which has none
    cosine_to_last: np.ndarray  # cosine to the same token after the last layer (1 at layer L)


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """(P, H) -> (P, P) float32 cosine similarities of every pair of rows (computed in float64); a zero vector's
    cosines are 0."""
    try:
        v = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError) as exc:  # a string, a ragged list: numpy's own message named no argument
        raise InputError(
            f"cosine_matrix takes a (P, H) array of numbers, got {type(vectors).__name__}"
        ) from exc
    if v.ndim != 2:  # one vector gave a scalar, a stack of matrices a 3-D answer, both without a word
        raise InputError(f"cosine_matrix takes a (P, H) array, one vector a row; got shape {v.shape}")
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    unit = np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)
    return (unit @ unit.T).astype(np.float32)


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of (..., H) arrays; 0 where either vector is zero."""
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    dots = np.einsum("...h,...h->...", a, b)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def layer_trajectory(analysis: Analysis | Vectors) -> LayerTrajectory:
    """Norm, cosine to the previous layer and cosine to the last layer, for every token at every layer."""
    # Its hidden states alone, an array, have no `hidden_states` to read.
    if not hasattr(analysis, "hidden_states"):
        raise InputError(
            f"layer_trajectory takes an Analysis or Vectors (model.analyze(text)), got {type(analysis).__name__}"
        )
    h = np.asarray(analysis.hidden_states, dtype=np.float64)  # (L + 1, S, H)
    previous = np.full(h.shape[:2], np.nan)
    previous[1:] = _cosine(h[1:], h[:-1])
    return LayerTrajectory(
        norms=np.linalg.norm(h, axis=-1),
        cosine_to_previous=previous,
        cosine_to_last=_cosine(h, h[-1:]),  # (L + 1, S, H) against (1, S, H), broadcast
    )


@dataclass(frozen=True)
class TokenMap:
    """The tokens of one layer projected on their first two principal components."""

    layer: int
    positions: np.ndarray  # (P,) int64: which tokens were kept (all, or all but the specials)
    coordinates: np.ndarray  # (P, 2) float64: the centred vectors on the two components
    components: np.ndarray  # (2, H) float64: unit directions in hidden space
    explained_variance_ratio: np.ndarray  # (2,) share of the total variance each component carries


def token_pca(analysis: Analysis | Vectors, layer: int, *, include_special: bool = True) -> TokenMap:
    """A 2-D PCA (numpy SVD) of the tokens' vectors at `layer` (0..L, as in `hidden_states`).

    Signs are fixed so the result is the same on every machine: each component points so that its largest
    coordinate (by absolute value, first on ties) over the kept tokens is positive. With fewer than three tokens
    the missing components are zero.
    """
    if not hasattr(analysis, "hidden_states"):
        raise InputError(
            f"token_pca takes an Analysis or Vectors (model.analyze(text)), got {type(analysis).__name__}"
        )
    h = np.asarray(analysis.hidden_states, dtype=np.float64)
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < len(h):
        raise InputError(f"layer must be an integer from 0 to {len(h) - 1}, got {layer!r}")
    keep = np.ones(h.shape[1], dtype=bool)
    if not include_special:
        keep = ~np.asarray(analysis.special_tokens_mask, dtype=bool)
    positions = np.flatnonzero(keep)
    if len(positions) == 0:
        raise InputError("no tokens left for the map: include the special tokens")
    x = h[layer, positions]  # (P, H)
    x = x - x.mean(axis=0)
    u, singular, vt = np.linalg.svd(
        x, full_matrices=False
    )  # u (P, K), singular (K,), vt (K, H); K = min(P, H)
    # Components past the points' rank (two tokens span a line) hold rounding noise alone, ~1e-16: they stay
    # zero (numpy.linalg.matrix_rank's tolerance).
    tolerance = singular.max(initial=0.0) * max(x.shape) * np.finfo(np.float64).eps
    k = min(2, int((singular > tolerance).sum()))
    coordinates = np.zeros((len(positions), 2))
    components = np.zeros((2, h.shape[-1]))
    coordinates[:, :k] = u[:, :k] * singular[:k]
    components[:k] = vt[:k]
    signs = np.sign(coordinates[np.argmax(np.abs(coordinates), axis=0), [0, 1]])  # (2,)
    signs[signs == 0] = 1.0
    total = float((singular**2).sum())
    ratio = np.zeros(2)
    if total > 0:
        ratio[:k] = singular[:k] ** 2 / total
    return TokenMap(
        layer=int(layer),
        positions=positions,
        coordinates=coordinates * signs,
        components=components * signs[:, None],
        explained_variance_ratio=ratio,
    )
