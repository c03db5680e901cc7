"""What DistilBERT and ALBERT change in BERT's module layout. The arithmetic is `encoder.py`'s: these classes
only name the modules as their checkpoints do and tell the shared forward which module does what.
(RoBERTa and ELECTRA keep BERT's layout: `encoder.BertModel` serves them, with a position offset and an
embedding projection.)

Dimensions: B = batch, S = sequence length, H = hidden size, E = embedding size, I = intermediate size.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..config import BertConfig
from .encoder import BertEmbeddings, Encoder, LayerParts
from .packed import linear

# -- DistilBERT: six layers distilled from BERT; no segment embeddings, no pooler, its own names ------------


class DistilBertSelfAttention(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        h = config.hidden_size
        self.n_heads = config.num_attention_heads
        self.q_lin, self.k_lin, self.v_lin, self.out_lin = (nn.Linear(h, h) for _ in range(4))
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)


class DistilBertFFN(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.lin1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.lin2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)


class DistilBertBlock(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.attention = DistilBertSelfAttention(config)
        self.sa_layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.ffn = DistilBertFFN(config)
        self.output_layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.activation = config.hidden_act

    @property
    def parts(self) -> LayerParts:
        a = self.attention
        return LayerParts(
            a.q_lin,
            a.k_lin,
            a.v_lin,
            a.n_heads,
            a.dropout,
            a.out_lin,
            None,  # DistilBERT applies no dropout between out_lin and the residual
            self.sa_layer_norm,
            self.ffn.lin1,
            self.activation,
            self.ffn.lin2,
            self.ffn.dropout,
            self.output_layer_norm,
        )


class DistilBertTransformer(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList(DistilBertBlock(config) for _ in range(config.num_hidden_layers))


class DistilBertModel(Encoder):
    """Checkpoint prefix `distilbert.`: `embeddings` (word + position) and `transformer.layer.N`."""

    def __init__(self, config: BertConfig, *, add_pooler: bool = False) -> None:
        super().__init__(config)
        if add_pooler:
            raise ValueError("DistilBERT has no pooler")
        self.embeddings = BertEmbeddings(config)  # type_vocab_size 0: no segment table
        self.transformer = DistilBertTransformer(config)

    def layer_parts(self) -> list[LayerParts]:
        return [block.parts for block in self.transformer.layer]


# -- ALBERT: factorised embeddings (E -> H) and one set of layer weights shared across layers ---------------


class AlbertAttention(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        h = config.hidden_size
        self.num_attention_heads = config.num_attention_heads
        self.query, self.key, self.value, self.dense = (nn.Linear(h, h) for _ in range(4))
        self.LayerNorm = nn.LayerNorm(h, eps=config.layer_norm_eps)
        self.attention_dropout = nn.Dropout(config.attention_probs_dropout_prob)
        self.output_dropout = nn.Dropout(config.hidden_dropout_prob)


class AlbertLayer(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.full_layer_layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attention = AlbertAttention(config)
        self.ffn = nn.Linear(config.hidden_size, config.intermediate_size)
        self.ffn_output = nn.Linear(config.intermediate_size, config.hidden_size)
        self.activation = config.hidden_act

    @property
    def parts(self) -> LayerParts:
        a = self.attention
        return LayerParts(
            a.query,
            a.key,
            a.value,
            a.num_attention_heads,
            a.attention_dropout,
            a.dense,
            a.output_dropout,
            a.LayerNorm,
            self.ffn,
            self.activation,
            self.ffn_output,
            None,  # ALBERT's FFN output goes to the residual without dropout
            self.full_layer_layer_norm,
        )


class AlbertLayerGroup(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.albert_layers = nn.ModuleList(AlbertLayer(config) for _ in range(config.inner_group_num))


class AlbertTransformer(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.embedding_hidden_mapping_in = nn.Linear(config.embedding_dim, config.hidden_size)
        self.albert_layer_groups = nn.ModuleList(
            AlbertLayerGroup(config) for _ in range(config.num_hidden_groups)
        )


class AlbertModel(Encoder):
    """Checkpoint prefix `albert.`: E-wide `embeddings`, `encoder.embedding_hidden_mapping_in` (E -> H),
    `encoder.albert_layer_groups.G.albert_layers.J`, and a bare Linear `pooler`.

    The weights are stored once per group and run `num_hidden_layers / num_hidden_groups` times each, so
    packing them packs each once. Every run counts as a layer of the results: L = num_hidden_layers x
    inner_group_num attention maps, as transformers reports them."""

    def __init__(self, config: BertConfig, *, add_pooler: bool = True) -> None:
        super().__init__(config)
        self.embeddings = BertEmbeddings(config)
        self.encoder = AlbertTransformer(config)
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size) if add_pooler else None

    def layer_parts(self) -> list[LayerParts]:
        c = self.config
        per_group = c.num_hidden_layers // c.num_hidden_groups
        groups = self.encoder.albert_layer_groups
        return [
            layer.parts
            for index in range(c.num_hidden_layers)
            for layer in groups[index // per_group].albert_layers
        ]

    def project(self, embedded: Tensor) -> Tensor:
        b, s, e = embedded.shape
        mapping = self.encoder.embedding_hidden_mapping_in
        return linear(mapping, embedded.reshape(b * s, e)).view(b, s, -1)  # (B * S, E) -> (B, S, H)

    def pool(self, last_hidden: Tensor) -> Tensor | None:
        return None if self.pooler is None else torch.tanh(linear(self.pooler, last_hidden[:, 0]))  # (B, H)
