"""Qwen3-MoE-like stand-in (pysplice tests, not SGLang): the model only overrides __init__;
its forward is Qwen2MoeModel's, in another file."""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.base import DecoderLayer, LogitsProcessor, default_layers
from sglang.srt.models.qwen2_moe import Qwen2MoeModel


class Qwen3MoeDecoderLayer(DecoderLayer):
    pass


class Qwen3MoeModel(Qwen2MoeModel):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__(config, quant_config, prefix, decoder_layer_type=Qwen3MoeDecoderLayer)


class Qwen3MoeForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.config = config
        self.model = Qwen3MoeModel(config, quant_config, prefix)
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


EntryClass = Qwen3MoeForCausalLM
