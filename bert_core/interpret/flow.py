"""Attention flow (Abnar & Zuidema, 2020): the maximum flow from a position at a layer down to each input token,
through the graph whose nodes are (level, position) and whose edges carry the residual-aware attention of the
layer between two levels as their capacity.

Rollout (`rollout.py`) multiplies the layers' maps, so every path counts; flow asks how much can get through
at most, so a path is only as good as its narrowest edge and paths compete for shared edges. It costs one
max-flow problem per (layer, position, input token): this is why it is offered only for short inputs.

The max-flow solver is Dinic's algorithm written here rather than networkx's: networkx is present only as a
dependency of torch (this module is torch-free and must not count on it), and on these small dense graphs its
per-call graph building made it ~10x slower than this loop over flat lists (12 layers, 12 tokens: ~15 ms per
problem with networkx, ~1.5 ms here). The tests check this solver against networkx.

Dimensions: L = layers, N = heads, S = sequence length. Levels run 0..L: level 0 is the input tokens, level
l + 1 the output of layer l (0-based), as in `Analysis.hidden_states`.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ..errors import InputError
from .rollout import residual_attention

# The default longest input: the whole (L, S, S) result for a 12-layer model at 16 tokens takes ~3 s on one
# core of the development host (~0.3 s at 8 tokens); the cost grows roughly as S^4 * L^2.
MAX_FLOW_TOKENS = 16


def attention_flow(
    attentions,
    head_mask: np.ndarray | None = None,
    *,
    max_tokens: int = MAX_FLOW_TOKENS,
    normalize: bool = True,
) -> np.ndarray:
    """Attention flow of every layer: (L, N, S, S) attention probabilities (or an `Analysis`, read with its own
    head_mask) -> (L, S, S) float64.

    [l, i, j] is the maximum flow from position i after layer l to input token j, with the residual-aware maps
    (`residual_attention`, as in rollout, with the run's head_mask) as capacities. With normalize (the paper's choice) each row is divided
    by its sum, so rows are distributions over the input tokens comparable with rollout's; otherwise each value
    is a raw flow, at most 1. Raises InputError when S > max_tokens (see MAX_FLOW_TOKENS for the cost).
    """
    flows = max_flow_through_layers(residual_attention(attentions, head_mask), max_tokens=max_tokens)
    if normalize:
        flows /= flows.sum(axis=-1, keepdims=True)
    return flows


def max_flow_through_layers(capacities: np.ndarray, *, max_tokens: int = MAX_FLOW_TOKENS) -> np.ndarray:
    """Maximum flows through a layered graph: capacities (L, S, S) -> flows (L, S, S) float64.

    capacities[k, a, b] >= 0 is the capacity of the edge from position a at level k + 1 down to position b at
    level k. flows[l, i, j] is the maximum flow from (level l + 1, position i) to (level 0, position j).
    """
    c = np.asarray(capacities, dtype=np.float64)
    if c.ndim != 3 or c.shape[1] != c.shape[2] or 0 in c.shape:
        raise InputError(f"capacities must be (layers, S, S) with S >= 1, got shape {c.shape}")
    if not np.all(np.isfinite(c)) or c.min() < 0:
        raise InputError("capacities must be finite and non-negative")
    layers, s, _ = c.shape
    if s > max_tokens:
        raise InputError(
            f"attention flow is limited to {max_tokens} tokens (this input has {s}): it solves one max-flow "
            f"problem per layer, position and input token; use attention rollout for longer inputs"
        )
    # Residues below this count as saturated: float subtraction leaves ~1e-17 where an edge is used up.
    eps = 1e-12 * max(float(c.max()), 1e-300)
    flows = np.zeros((layers, s, s))
    for layer in range(layers):
        graph = _LayeredGraph(c[: layer + 1])
        top = (layer + 1) * s
        for i in range(s):
            for j in range(s):
                flows[layer, i, j] = graph.max_flow(top + i, j, eps)
    return flows


class _LayeredGraph:
    """Levels 0..K of S nodes each (node id = level * S + position), an edge from every node to every node of
    the level below. Edges are stored in pairs, forward at an even index and its reverse at the next odd one,
    so e ^ 1 is an edge's partner."""

    def __init__(self, capacities: np.ndarray) -> None:
        levels, s, _ = capacities.shape
        self.nodes = (levels + 1) * s
        self.adjacent: list[list[int]] = [[] for _ in range(self.nodes)]  # edge ids leaving each node
        self.target: list[int] = []  # node each edge points to
        self.capacity: list[float] = []  # initial residual capacity; reverse edges start at 0
        for k in range(levels):
            rows = capacities[k].tolist()  # (S, S): level k + 1 -> level k
            for a in range(s):
                upper = (k + 1) * s + a
                for b in range(s):
                    lower = k * s + b
                    self.adjacent[upper].append(len(self.target))
                    self.target.append(lower)
                    self.capacity.append(rows[a][b])
                    self.adjacent[lower].append(len(self.target))
                    self.target.append(upper)
                    self.capacity.append(0.0)

    def max_flow(self, source: int, sink: int, eps: float) -> float:
        """Dinic: breadth-first levels on the residual graph, then a blocking flow along level-increasing
        edges; repeat until the sink is unreachable. Residual (reverse) edges let a later path undo part of an
        earlier one, which in this graph means stepping back up a level."""
        residual = list(self.capacity)
        adjacent, target = self.adjacent, self.target
        total = 0.0
        while True:
            depth = [-1] * self.nodes
            depth[source] = 0
            queue = deque([source])
            while queue:
                u = queue.popleft()
                for e in adjacent[u]:
                    v = target[e]
                    if depth[v] < 0 and residual[e] > eps:
                        depth[v] = depth[u] + 1
                        queue.append(v)
            if depth[sink] < 0:
                return total
            next_edge = [0] * self.nodes  # per node, the first edge not yet found useless in this phase
            path: list[int] = []
            u = source
            while True:
                if u == sink:
                    pushed = min(residual[e] for e in path)
                    for e in path:
                        residual[e] -= pushed
                        residual[e ^ 1] += pushed
                    total += pushed
                    path.clear()
                    u = source
                    continue
                edges = adjacent[u]
                while next_edge[u] < len(edges):
                    e = edges[next_edge[u]]
                    if residual[e] > eps and depth[target[e]] == depth[u] + 1:
                        break
                    next_edge[u] += 1
                if next_edge[u] < len(edges):
                    e = edges[next_edge[u]]
                    path.append(e)
                    u = target[e]
                elif u == source:
                    break  # blocking flow found: on to the next phase
                else:
                    u = target[path.pop() ^ 1]  # dead end: back to the node we came from, try its next edge
                    next_edge[u] += 1
