"""Llama-like stand-in (pysplice tests, not SGLang): the CausalLM builds its model through
`self._init_model(...)`; aux states are a list; the final norm has the two-branch form."""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.base import (
    DecoderLayer,
    LogitsProcessor,
    PPProxyTensors,
    RMSNorm,
    default_layers,
    get_pp_group,
)


class LlamaModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.config = config
        self.pp_group = get_pp_group()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(config, i) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size)
        self.layers_to_capture = []

    def forward(self, input_ids, positions, forward_batch, input_embeds=None, pp_proxy_tensors=None):
        hidden_states = self.embed_tokens(input_ids) if input_embeds is None else input_embeds
        residual = None
        aux_hidden_states = []
        for i, layer in enumerate(self.layers):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual if residual is not None else hidden_states)
            hidden_states, residual = layer(positions, hidden_states, forward_batch, residual)
        if not self.pp_group.is_last_rank:
            return PPProxyTensors(hidden_states=hidden_states, residual=residual)
        if not forward_batch.forward_mode.is_idle():
            if residual is None:
                hidden_states = self.norm(hidden_states)
            else:
                hidden_states, _ = self.norm(hidden_states, residual)
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states


class LlamaForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.config = config
        self.pp_group = get_pp_group()
        self.model = self._init_model(config, quant_config, prefix)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.logits_processor = LogitsProcessor()
        self.capture_aux_hidden_states = False

    def _init_model(self, config, quant_config=None, prefix=""):
        return LlamaModel(config, quant_config=quant_config, prefix=prefix)

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, input_embeds=None):
        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch, aux_hidden_states)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.capture_aux_hidden_states = True
        self.model.layers_to_capture = default_layers(self.config) if layer_ids is None else [i + 1 for i in layer_ids]


EntryClass = [LlamaForCausalLM]
