"""GPT-OSS-like stand-in (pysplice tests, not SGLang): no residual stream in the model (each
layer adds its own), aux states are the layer inputs, the final norm is `self.norm(x)`, and
the pipeline branch builds its proxy in a variable first."""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.base import LogitsProcessor, PPProxyTensors, RMSNorm, default_layers, get_pp_group


class GptOssDecoderLayer(nn.Module):
    def __init__(self, config, layer_id=0):
        super().__init__()
        self.norm = RMSNorm(config.hidden_size)
        self.mlp = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(self, hidden_states):
        return hidden_states + torch.sin(self.mlp(self.norm(hidden_states)))


class GptOssModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.config = config
        self.pp_group = get_pp_group()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(GptOssDecoderLayer(config, i) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size)
        self.layers_to_capture = []

    def forward(self, input_ids, positions, forward_batch, input_embeds=None, pp_proxy_tensors=None):
        hidden_states = self.embed_tokens(input_ids) if input_embeds is None else input_embeds
        aux_hidden_states = []
        for i, layer in enumerate(self.layers):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states)
            hidden_states = layer(hidden_states)
        if not self.pp_group.is_last_rank:
            proxy = PPProxyTensors(hidden_states=hidden_states)
            return proxy
        hidden_states = self.norm(hidden_states)
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states


class GptOssForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.config = config
        self.model = GptOssModel(config, quant_config, prefix)
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


EntryClass = GptOssForCausalLM
