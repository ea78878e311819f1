"""Qwen2-MoE-like stand-in (pysplice tests, not SGLang): the model's forward packs the aux
states (0.5.17+ style) and uses the tuple-form final norm; Qwen3-MoE inherits it."""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.base import (
    AuxHiddenStatePacker,
    DecoderLayer,
    LogitsProcessor,
    PPProxyTensors,
    RMSNorm,
    default_layers,
    get_pp_group,
)


class Qwen2MoeModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix="", decoder_layer_type=DecoderLayer):
        super().__init__()
        self.config = config
        self.pp_group = get_pp_group()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(decoder_layer_type(config, i) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size)
        self.layers_to_capture = []

    def forward(self, input_ids, positions, forward_batch, input_embeds=None, pp_proxy_tensors=None):
        hidden_states = self.embed_tokens(input_ids) if input_embeds is None else input_embeds
        residual = torch.zeros_like(hidden_states)
        aux_hidden_states = AuxHiddenStatePacker(len(self.layers_to_capture))
        for i in range(len(self.layers)):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = self.layers[i](positions, hidden_states, forward_batch, residual)
        if not self.pp_group.is_last_rank:
            return PPProxyTensors(hidden_states=hidden_states, residual=residual)
        if not forward_batch.forward_mode.is_idle():
            hidden_states, _ = self.norm(hidden_states, residual)
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states.finalize()


class Qwen2MoeForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.config = config
        self.model = Qwen2MoeModel(config, quant_config, prefix)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.logits_processor = LogitsProcessor()
        self.capture_aux_hidden_states = False

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


EntryClass = Qwen2MoeForCausalLM
