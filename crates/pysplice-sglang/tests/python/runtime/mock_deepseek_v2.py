"""A tiny stand-in for sglang/srt/models/deepseek_v2.py, written for pysplice's tests.

It is not SGLang code. It mimics only the interfaces that the sglang-hs-dump recipe
touches, laid out like the real module (0.5.x) so that the recipe's targets exist:

- DeepseekV2Model.__init__ / forward(input_ids, positions, forward_batch,
  input_embeds=None, pp_proxy_tensors=None), whose body has the pipeline-parallel
  early return inside `if not self.pp_group.is_last_rank:` with the final norm in the
  `else:` branch under `if not forward_batch.forward_mode.is_idle():`, the aux capture
  of the residual stream entering layer i when `i in self.layers_to_capture`, the
  conditional bare-tensor return when nothing was captured and the tuple return;
- DeepseekV2ForCausalLM.__init__ ending with `self.capture_aux_hidden_states = False`,
  set_eagle3_layers_to_capture(layer_ids=None) and a forward that unpacks the tuple.

The aux container is a list (SGLang up to 0.5.16) or, with AUX_FORM = "packed", an
AuxHiddenStatePacker whose finalize() returns one [T, K*H] tensor (0.5.17+).
Module globals stand in for SGLang's process-wide state; tests set them before
building a model: AUX_FORM and PP_GROUP (see get_pp_group).
"""

import enum
from typing import List, Optional

import torch
from torch import nn

# "list" (SGLang <= 0.5.16) or "packed" (AuxHiddenStatePacker, 0.5.17+).
AUX_FORM = "list"


class ForwardMode(enum.IntEnum):
    # PREFILL only exists in 0.2.x/0.3.x releases; kept to test that path.
    PREFILL = enum.auto()
    EXTEND = enum.auto()
    DECODE = enum.auto()
    MIXED = enum.auto()
    IDLE = enum.auto()
    TARGET_VERIFY = enum.auto()
    DRAFT_EXTEND = enum.auto()

    def is_extend(self):
        # As in SGLang: true for more than plain prefill.
        return self in (
            ForwardMode.EXTEND,
            ForwardMode.MIXED,
            ForwardMode.DRAFT_EXTEND,
            ForwardMode.TARGET_VERIFY,
        )

    def is_decode(self):
        return self == ForwardMode.DECODE

    def is_idle(self):
        return self == ForwardMode.IDLE


class ForwardBatch:
    """The fields of SGLang's ForwardBatch that the recipe reads."""

    def __init__(
        self,
        forward_mode: ForwardMode,
        input_ids: Optional[torch.Tensor],
        positions: Optional[torch.Tensor] = None,
        extend_seq_lens_cpu: Optional[List[int]] = None,
        extend_prefix_lens_cpu: Optional[List[int]] = None,
        rids: Optional[List[str]] = None,
        orig_seq_lens: Optional[List[int]] = None,
    ):
        self.forward_mode = forward_mode
        self.input_ids = input_ids
        self.positions = positions
        self.extend_seq_lens_cpu = extend_seq_lens_cpu
        self.extend_prefix_lens_cpu = extend_prefix_lens_cpu
        device = input_ids.device if input_ids is not None else None
        self.extend_seq_lens = (
            torch.tensor(extend_seq_lens_cpu, device=device)
            if extend_seq_lens_cpu is not None
            else None
        )
        self.extend_prefix_lens = (
            torch.tensor(extend_prefix_lens_cpu, device=device)
            if extend_prefix_lens_cpu is not None
            else None
        )
        self.rids = rids
        # 0.5.2+: each request's full length, past this pass when chunked prefill cut it
        self.orig_seq_lens = (
            torch.tensor(orig_seq_lens, dtype=torch.int32, device=device)
            if orig_seq_lens is not None
            else None
        )
        self.can_run_tbo = False


class PPGroup:
    def __init__(self, rank: int = 0, world_size: int = 1):
        self.rank_in_group = rank
        self.world_size = world_size

    @property
    def is_first_rank(self):
        return self.rank_in_group == 0

    @property
    def is_last_rank(self):
        return self.rank_in_group == self.world_size - 1


PP_GROUP = PPGroup()


def get_pp_group() -> PPGroup:
    return PP_GROUP


class PPProxyTensors:
    """What a non-last pipeline rank hands to the next one."""

    def __init__(self, tensors):
        self.tensors = tensors

    def __getitem__(self, key):
        return self.tensors[key]


class AuxHiddenStatePacker:
    """Collects K captures into one preallocated [T, K*H] buffer."""

    def __init__(self, num_captures: int):
        self._num_captures = int(num_captures)
        self._buffer = None
        self._width = None
        self._count = 0

    def append(self, hidden: torch.Tensor) -> None:
        if self._buffer is None:
            self._width = hidden.shape[-1]
            self._buffer = hidden.new_empty(
                (*hidden.shape[:-1], self._width * self._num_captures)
            )
        start = self._count * self._width
        self._buffer[..., start : start + self._width].copy_(hidden)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def finalize(self) -> torch.Tensor:
        if self._buffer is None or self._count != self._num_captures:
            raise RuntimeError(
                "captured %d of %d aux hidden states"
                % (self._count, self._num_captures)
            )
        return self._buffer


class MockConfig:
    def __init__(
        self,
        num_hidden_layers: int = 8,
        hidden_size: int = 16,
        vocab_size: int = 64,
        rms_norm_eps: float = 1e-6,
        architectures: Optional[List[str]] = None,
    ):
        self.num_hidden_layers = num_hidden_layers
        self.hidden_size = hidden_size
        self.vocab_size = vocab_size
        self.rms_norm_eps = rms_norm_eps
        self.architectures = architectures or ["DeepseekV3ForCausalLM"]


class RMSNorm(nn.Module):
    """SGLang's fused form: norm(x) or norm(x, residual) -> (norm(x + residual), x + residual)."""

    def __init__(self, hidden_size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden_size))
        self.eps = eps

    def _norm(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype) * self.weight

    def forward(self, x, residual=None):
        if residual is None:
            return self._norm(x)
        x = x + residual
        return self._norm(x), x


class DeepseekV2DecoderLayer(nn.Module):
    """Pre-norm residual block; a token-wise MLP stands in for attention + MoE."""

    def __init__(self, config: MockConfig, layer_id: int):
        super().__init__()
        self.layer_id = layer_id
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.up = nn.Linear(config.hidden_size, 2 * config.hidden_size, bias=False)
        self.down = nn.Linear(2 * config.hidden_size, config.hidden_size, bias=False)

    def forward(self, positions, hidden_states, forward_batch, residual):
        if residual is None:
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
        else:
            hidden_states, residual = self.input_layernorm(hidden_states, residual)
        hidden_states = self.down(torch.tanh(self.up(hidden_states)))
        return hidden_states, residual


class DeepseekV2Model(nn.Module):
    def __init__(self, config: MockConfig, quant_config=None, prefix: str = ""):
        super().__init__()
        self.pp_group = get_pp_group()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            DeepseekV2DecoderLayer(config, i) for i in range(config.num_hidden_layers)
        )
        self.start_layer = 0
        self.end_layer = config.num_hidden_layers
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.aux_form = AUX_FORM
        self.layers_to_capture = []

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        forward_batch: ForwardBatch,
        input_embeds: torch.Tensor = None,
        pp_proxy_tensors: Optional[PPProxyTensors] = None,
    ):
        if self.pp_group.is_first_rank:
            if input_embeds is None:
                hidden_states = self.embed_tokens(input_ids)
            else:
                hidden_states = input_embeds
            residual = None
        else:
            assert pp_proxy_tensors is not None
            hidden_states = pp_proxy_tensors["hidden_states"]
            residual = pp_proxy_tensors["residual"]

        if self.aux_form == "packed":
            aux_hidden_states = AuxHiddenStatePacker(len(self.layers_to_capture))
        else:
            aux_hidden_states = []
        for i in range(self.start_layer, self.end_layer):
            if i in self.layers_to_capture:
                # The residual stream entering layer i (as SGLang; layer 0 would fail).
                aux_hidden_states.append(hidden_states + residual)
            layer = self.layers[i]
            hidden_states, residual = layer(
                positions, hidden_states, forward_batch, residual
            )

        if not self.pp_group.is_last_rank:
            return PPProxyTensors(
                {
                    "hidden_states": hidden_states,
                    "residual": residual,
                }
            )
        else:
            if not forward_batch.forward_mode.is_idle():
                if residual is None:
                    hidden_states = self.norm(hidden_states)
                else:
                    hidden_states, _ = self.norm(hidden_states, residual)

        if len(aux_hidden_states) == 0:
            return hidden_states
        if isinstance(aux_hidden_states, AuxHiddenStatePacker):
            return hidden_states, aux_hidden_states.finalize()
        return hidden_states, aux_hidden_states


class LogitsProcessorOutput:
    def __init__(self, next_token_logits, aux_hidden_states):
        self.next_token_logits = next_token_logits
        self.aux_hidden_states = aux_hidden_states


class LogitsProcessor(nn.Module):
    def forward(self, input_ids, hidden_states, lm_head, forward_batch, aux_hidden_states=None):
        if aux_hidden_states is not None and not isinstance(aux_hidden_states, torch.Tensor):
            aux_hidden_states = torch.cat(aux_hidden_states, dim=-1)
        return LogitsProcessorOutput(lm_head(hidden_states), aux_hidden_states)


class DeepseekV2ForCausalLM(nn.Module):
    def __init__(self, config: MockConfig, quant_config=None, prefix: str = ""):
        super().__init__()
        self.pp_group = get_pp_group()
        self.config = config
        self.quant_config = quant_config
        self.model = DeepseekV2Model(config, quant_config, prefix="model")
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.logits_processor = LogitsProcessor()
        self.capture_aux_hidden_states = False

    @torch.no_grad()
    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        forward_batch: ForwardBatch,
        input_embeds: torch.Tensor = None,
        pp_proxy_tensors: Optional[PPProxyTensors] = None,
    ):
        hidden_states = self.model(
            input_ids, positions, forward_batch, input_embeds, pp_proxy_tensors
        )
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states

        if self.pp_group.is_last_rank:
            return self.logits_processor(
                input_ids, hidden_states, self.lm_head, forward_batch, aux_hidden_states
            )
        else:
            return hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        # As SGLang 0.5.13+: +1 only when the ids start at 1.
        if not self.pp_group.is_last_rank:
            return

        if layer_ids is None:
            self.capture_aux_hidden_states = True
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.capture_aux_hidden_states = True
            if layer_ids and layer_ids[0] == 1:
                self.model.layers_to_capture = [val + 1 for val in layer_ids]
            else:
                self.model.layers_to_capture = list(layer_ids)


class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):
    pass


EntryClass = [DeepseekV2ForCausalLM, DeepseekV3ForCausalLM]
