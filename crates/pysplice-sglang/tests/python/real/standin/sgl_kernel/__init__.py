"""A test-only stand-in for SGLang's CPU kernel package, for the real server on a CPU machine.

SGLang's CPU engine imports `sgl_kernel`, whose CPU build is not on PyPI. Every name here imports
and raises when called, except the two attention kernels of the `intel_amx` backend, which are
written in plain PyTorch: DeepSeek's MLA prefill runs only through that backend on a CPU. Without
`convert_weight_packed` among the registered ops SGLang sees no AMX, so every linear, norm, rope and
MoE layer takes its native PyTorch path. Nothing of this module runs in production.
"""

import importlib.abc
import importlib.machinery
import sys
import types

import torch


class _Missing:
    """A name SGLang imports but this stand-in does not provide: importable, raises when called."""

    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise NotImplementedError("sgl_kernel stand-in: %s is not available on this machine" % self._name)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing("%s.%s" % (self._name, attr))


def __getattr__(name):  # PEP 562: `from sgl_kernel import anything`
    if name.startswith("__"):
        raise AttributeError(name)
    return _Missing(name)


class _SubmoduleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes `import sgl_kernel.<anything>` work (0.5.10 imports `sgl_kernel.kvcacheio`)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        def missing(name):
            if name.startswith("__"):  # __file__, __spec__, ...: what tools probe a module for
                raise AttributeError(name)
            return _Missing("%s.%s" % (spec.name, name))

        module.__getattr__ = missing
        return module

    def exec_module(self, module):
        pass


sys.meta_path.append(_SubmoduleFinder())
__path__ = []  # a package, so that its submodules resolve through the finder above


def _attend(q, keys, values, scaling, logit_cap, causal_offset):
    """Attention of `q` [T, H, D] over `keys` [S, Hkv, D] / `values` [S, Hkv, Dv] in float32.

    Query row j sees the keys 0 .. causal_offset + j (None: all of them).
    """
    heads, kv_heads = q.shape[1], keys.shape[1]
    qf = q.float().transpose(0, 1)  # [H, T, D]
    kf = keys.float().repeat_interleave(heads // kv_heads, dim=1).transpose(0, 1)
    vf = values.float().repeat_interleave(heads // kv_heads, dim=1).transpose(0, 1)
    scores = torch.matmul(qf, kf[..., : qf.shape[-1]].transpose(1, 2)) * scaling
    if logit_cap and logit_cap > 0:
        scores = logit_cap * torch.tanh(scores / logit_cap)
    if causal_offset is not None:
        rows = torch.arange(q.shape[0]).unsqueeze(1)
        cols = torch.arange(keys.shape[0]).unsqueeze(0)
        scores = scores.masked_fill(cols > rows + causal_offset, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), vf).transpose(0, 1)  # [T, H, Dv]


def extend_attention_cpu(q, k, v, o, key_buffer, value_buffer, *rest):
    """Prefill: each request's new tokens over its cached prefix and themselves (causal).

    0.5.10 passes 14 arguments, 0.5.23 22 (K/V scales after the buffers, then cross attention,
    window, encoder lengths, sinks, tree mask and is_causal after the logit cap).
    """
    if len(rest) >= 14:  # 0.5.23: key_scale, value_scale first; is_causal last
        rest = rest[2:]
        causal = bool(rest[-1])
    else:
        causal = True
    req_to_token, req_pool_indices, seq_lens, extend_seq_lens, extend_start_loc = rest[:5]
    scaling, logit_cap = rest[6], rest[7]
    for i in range(seq_lens.shape[0]):
        total, new = int(seq_lens[i]), int(extend_seq_lens[i])
        start, prefix = int(extend_start_loc[i]), total - new
        slots = req_to_token[req_pool_indices[i], :total].long()
        if k is None or v is None:  # the layer's K/V are in the cache already
            keys, values = key_buffer[slots], value_buffer[slots]
        elif prefix == 0:  # a fresh prompt: its own K/V (MLA's MHA prefill passes full heads)
            keys, values = k[start : start + new], v[start : start + new]
        elif k.shape[1:] == key_buffer.shape[1:] and v.shape[1:] == value_buffer.shape[1:]:
            keys = torch.cat([key_buffer[slots[:prefix]], k[start : start + new].to(key_buffer.dtype)])
            values = torch.cat([value_buffer[slots[:prefix]], v[start : start + new].to(value_buffer.dtype)])
        else:
            raise NotImplementedError("sgl_kernel stand-in: a cached prefix under K/V of another shape than the cache's")
        out = _attend(q[start : start + new], keys, values, scaling, logit_cap, prefix if causal else None)
        o[start : start + new] = out.to(o.dtype)


def decode_attention_cpu(q, key_buffer, value_buffer, *rest):
    """Decode: one new token per request; writes its K/V at its cache slot first.

    0.5.10 passes 13 arguments, 0.5.23 19 (K/V scales after the buffers; cross attention, window,
    encoder lengths and sinks after the logit cap).
    """
    if len(rest) >= 16:
        rest = rest[2:]
    o, k, v, loc, _attn_logits, req_to_token, req_pool_indices, seq_lens, scaling, logit_cap = rest[:10]
    if k is not None and v is not None:
        key_buffer[loc.long()] = k.to(key_buffer.dtype)
        value_buffer[loc.long()] = v.to(value_buffer.dtype)
    for i in range(seq_lens.shape[0]):
        slots = req_to_token[req_pool_indices[i], : int(seq_lens[i])].long()
        out = _attend(q[i : i + 1], key_buffer[slots], value_buffer[slots], scaling, logit_cap, None)
        o[i : i + 1] = out.to(o.dtype)


# SGLang's backend takes them as `torch.ops.sgl_kernel.<name>`; an op namespace is a module, so
# setting the attribute is enough (no schema, no other op registered).
torch.ops.sgl_kernel.extend_attention_cpu = extend_attention_cpu
torch.ops.sgl_kernel.decode_attention_cpu = decode_attention_cpu
