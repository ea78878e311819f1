"""Shared pieces of the stand-in model files (written for pysplice's tests, not SGLang code):
the fields of ForwardBatch the dump reads, pipeline group, proxy tensors, the aux packer,
a fused RMSNorm, a token-wise decoder layer, a logits processor."""

import enum

import torch
from torch import nn


class ForwardMode(enum.IntEnum):
    EXTEND = enum.auto()
    DECODE = enum.auto()
    IDLE = enum.auto()

    def is_idle(self):
        return self == ForwardMode.IDLE


class ForwardBatch:
    def __init__(self, forward_mode, input_ids, lens, rids=None):
        self.forward_mode = forward_mode
        self.input_ids = input_ids
        self.extend_seq_lens_cpu = list(lens)
        self.extend_prefix_lens_cpu = [0] * len(lens)
        self.extend_seq_lens = torch.tensor(lens)
        self.extend_prefix_lens = torch.zeros(len(lens), dtype=torch.long)
        self.orig_seq_lens = torch.tensor(lens)
        self.rids = rids


class PPGroup:
    def __init__(self, rank=0, world_size=1):
        self.rank_in_group = rank
        self.world_size = world_size

    @property
    def is_first_rank(self):
        return self.rank_in_group == 0

    @property
    def is_last_rank(self):
        return self.rank_in_group == self.world_size - 1


def get_pp_group():
    return PPGroup()


class PPProxyTensors(dict):
    pass


class AuxHiddenStatePacker:
    """K captures into one [T, K*H] tensor (SGLang 0.5.17+ style)."""

    def __init__(self, num_captures):
        self.num = num_captures
        self.parts = []

    def append(self, hidden):
        self.parts.append(hidden)

    def __len__(self):
        return len(self.parts)

    def finalize(self):
        if len(self.parts) != self.num:
            raise RuntimeError("captured %d of %d" % (len(self.parts), self.num))
        return torch.cat(self.parts, dim=-1)


class Config:
    def __init__(self, num_hidden_layers=8, hidden_size=16, vocab_size=64, architectures=None):
        self.num_hidden_layers = num_hidden_layers
        self.hidden_size = hidden_size
        self.vocab_size = vocab_size
        self.rms_norm_eps = 1e-6
        self.architectures = architectures or []
        self.text_config = self


class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden_size))
        self.eps = eps

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    def forward(self, x, residual=None):
        if residual is None:
            return self._norm(x)
        x = x + residual
        return self._norm(x), x


class DecoderLayer(nn.Module):
    def __init__(self, config, layer_id=0):
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size)
        self.up = nn.Linear(config.hidden_size, 2 * config.hidden_size, bias=False)
        self.down = nn.Linear(2 * config.hidden_size, config.hidden_size, bias=False)

    def forward(self, positions, hidden_states, forward_batch, residual):
        if residual is None:
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
        else:
            hidden_states, residual = self.input_layernorm(hidden_states, residual)
        return self.down(torch.tanh(self.up(hidden_states))), residual


class LogitsProcessor(nn.Module):
    def forward(self, input_ids, hidden_states, lm_head, forward_batch, aux_hidden_states=None):
        return lm_head(hidden_states), aux_hidden_states


def default_layers(config):
    n = config.num_hidden_layers
    return [2, n // 2, n - 3]
