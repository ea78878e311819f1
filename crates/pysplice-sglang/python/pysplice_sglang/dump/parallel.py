"""The ranks and sizes of this process and the server's chunked prefill size, from wherever each
SGLang release keeps them.

Its definitions are injected as they are written here (see __init__.py).
"""


try:
    import torch
except ImportError:  # the dump runs under PyTorch; the parts that need none are tested without it
    torch = None


def _pysplice_hs_ranks():
    # (attention-TP rank, attention-DP rank). The getters moved between releases, so
    # try each home in turn. Not the star re-export in sglang.srt.distributed: from
    # 0.5.21 it no longer exports get_tensor_model_parallel_rank.
    try:  # 0.5.14+
        from sglang.srt.runtime_context import get_parallel

        parallel = get_parallel()
        return int(parallel.attn_tp_rank), int(parallel.attn_dp_rank)
    except Exception:
        pass
    try:  # 0.4.x - 0.5.17
        from sglang.srt.layers.dp_attention import get_attention_dp_rank, get_attention_tp_rank

        return int(get_attention_tp_rank()), int(get_attention_dp_rank())
    except Exception:
        pass
    try:  # releases with SGLang's own parallel_state but no DP attention
        from sglang.srt.distributed.parallel_state import get_tensor_model_parallel_rank

        return int(get_tensor_model_parallel_rank()), 0
    except Exception:
        pass
    try:  # 0.2.x/0.3.x (vLLM parallel state): the process group is the TP group
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return int(torch.distributed.get_rank()), 0
    except Exception:
        pass
    return 0, 0


def _pysplice_hs_chunk_size():
    # The server's chunked prefill size, or 0 when off or unknown (0.3.x and older
    # do not publish it to the model process).
    args = None
    try:  # 0.5.10+
        from sglang.srt.server_args import get_global_server_args

        args = get_global_server_args()
    except Exception:
        pass
    try:  # 0.5.23+ retired the accessor above
        if args is None:
            from sglang.srt.runtime_context import get_schedule

            args = get_schedule()
    except Exception:
        pass
    size = getattr(args, "chunked_prefill_size", None)
    if size is None:
        try:  # 0.4.6 - 0.5.9
            from sglang.srt.managers.schedule_batch import global_server_args_dict

            size = global_server_args_dict.get("chunked_prefill_size")
        except Exception:
            pass
    try:
        return max(int(size), 0) if size is not None else 0
    except (TypeError, ValueError):
        return 0


def _pysplice_hs_parallel():
    # Ranks and sizes of this process (tensor, attention-TP, attention-DP, pipeline),
    # from the homes _pysplice_hs_ranks tries, in the same order; None where none says.
    import importlib

    out = dict.fromkeys(
        ("tp_rank", "tp_size", "attn_tp_rank", "attn_tp_size", "attn_dp_rank", "attn_dp_size", "pp_rank", "pp_size")
    )

    def fill(key, read):
        if out[key] is None:
            try:
                value = read()
                out[key] = int(value) if value is not None else None
            except Exception:
                pass

    try:  # 0.5.14+: one context object; a field not yet published raises
        parallel = importlib.import_module("sglang.srt.runtime_context").get_parallel()
        for key in out:
            fill(key, lambda key=key: getattr(parallel, key))
    except Exception:
        pass
    try:  # 0.4.x - 0.5.17
        dpa = importlib.import_module("sglang.srt.layers.dp_attention")
        for key in ("attn_tp_rank", "attn_tp_size", "attn_dp_rank", "attn_dp_size"):
            name = "get_attention_%s_%s" % tuple(key[5:].split("_"))
            fill(key, lambda name=name: getattr(dpa, name)())
    except Exception:
        pass
    try:  # SGLang's own parallel_state
        ps = importlib.import_module("sglang.srt.distributed.parallel_state")
        fill("tp_rank", lambda: ps.get_tensor_model_parallel_rank())
        fill("tp_size", lambda: ps.get_tensor_model_parallel_world_size())
        fill("pp_rank", lambda: ps.get_pp_group().rank_in_group)
        fill("pp_size", lambda: ps.get_pp_group().world_size)
    except Exception:
        pass
    try:  # 0.2.x/0.3.x (vLLM parallel state): the process group is the TP group
        if out["tp_rank"] is None and torch.distributed.is_available() and torch.distributed.is_initialized():
            fill("tp_rank", torch.distributed.get_rank)
            fill("tp_size", torch.distributed.get_world_size)
    except Exception:
        pass
    return out
