"""A small stand-in for an SGLang model file, used by pysplice's examples.

The shape follows SGLang's DeepSeek-V2 model (a decoder stack under pipeline
parallelism, a causal-LM wrapper that can capture auxiliary hidden states for
EAGLE-3 drafting), but every line here is written for the demo: it imports
nothing from SGLang and is never run.
"""

from typing import Iterable, List, Optional, Tuple

import torch
from torch import nn

from demo_runtime import ForwardBatch, PPProxyTensors, get_pp_group


class DemoDecoderLayer(nn.Module):
    def __init__(self, hidden_size: int, layer_id: int) -> None:
        super().__init__()
        self.layer_id = layer_id
        self.mix = nn.Linear(hidden_size, hidden_size)

    def forward(self, positions, hidden_states, forward_batch, residual):
        if residual is None:
            residual = hidden_states
        else:
            hidden_states = hidden_states + residual
            residual = hidden_states
        return self.mix(hidden_states), residual


class DeepseekV2Model(nn.Module):
    """The decoder stack: embeddings, layers, final norm."""

    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.pp_group = get_pp_group()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            DemoDecoderLayer(config.hidden_size, layer_id)
            for layer_id in range(config.num_hidden_layers)
        )
        self.start_layer = 0
        self.end_layer = config.num_hidden_layers
        self.norm = nn.LayerNorm(config.hidden_size)
        self.layers_to_capture: List[int] = []

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed_tokens

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        forward_batch: ForwardBatch,
        input_embeds: Optional[torch.Tensor] = None,
        pp_proxy_tensors: Optional[PPProxyTensors] = None,
    ):
        if self.pp_group.is_first_rank:
            hidden_states = input_embeds if input_embeds is not None else self.embed_tokens(input_ids)
            residual = None
        else:
            hidden_states = pp_proxy_tensors["hidden_states"]
            residual = pp_proxy_tensors["residual"]

        aux_hidden_states = []
        for i in range(self.start_layer, self.end_layer):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual if residual is not None else hidden_states)
            layer = self.layers[i]
            hidden_states, residual = layer(positions, hidden_states, forward_batch, residual)

        if not self.pp_group.is_last_rank:
            # Intermediate pipeline stages hand their state to the next stage.
            return PPProxyTensors({"hidden_states": hidden_states, "residual": residual})

        if not forward_batch.forward_mode.is_idle():
            hidden_states = self.norm(hidden_states + residual)

        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states


class DeepseekV2ForCausalLM(nn.Module):
    """The model plus its language-model head."""

    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.pp_group = get_pp_group()
        self.model = DeepseekV2Model(config, quant_config, prefix="model")
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.capture_aux_hidden_states = False

    @torch.no_grad()
    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        forward_batch: ForwardBatch,
        input_embeds: Optional[torch.Tensor] = None,
        pp_proxy_tensors: Optional[PPProxyTensors] = None,
    ):
        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds, pp_proxy_tensors)
        if not self.pp_group.is_last_rank:
            return hidden_states
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return self.lm_head(hidden_states), aux_hidden_states

    def load_weights(self, weights: Iterable[Tuple[str, torch.Tensor]]) -> None:
        params = dict(self.named_parameters())
        for name, tensor in weights:
            if name in params:
                params[name].data.copy_(tensor)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None) -> None:
        if not self.pp_group.is_last_rank:
            return
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [layer_id + 1 for layer_id in layer_ids]


EntryClass = [DeepseekV2ForCausalLM]
