"""VLM-wrapper stand-in (pysplice tests, not SGLang): holds a Llama-like CausalLM as
`language_model` (chosen through an __init__ parameter), mixes image features into the
embeddings and calls the language model with input_ids=None."""

from typing import List, Optional

import torch
from torch import nn

from sglang.srt.models.llama import LlamaForCausalLM


class VlmForConditionalGeneration(nn.Module):
    def __init__(self, config, quant_config=None, prefix="", language_model_cls=LlamaForCausalLM):
        super().__init__()
        self.config = config
        self.vision = nn.Linear(4, config.hidden_size, bias=False)
        self.language_model = language_model_cls(config.text_config, quant_config, prefix)

    @torch.no_grad()
    def forward(self, input_ids, positions, forward_batch, image=None):
        embeds = self.language_model.model.embed_tokens(input_ids)
        if image is not None:
            embeds = embeds.clone()
            embeds[: image.shape[0]] += self.vision(image)
        return self.language_model(None, positions, forward_batch, input_embeds=embeds)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.language_model.set_eagle3_layers_to_capture(layer_ids)


EntryClass = [VlmForConditionalGeneration]
