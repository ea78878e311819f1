"""The identity of chunked requests: which field of a release's ForwardBatch links the chunks of
one request across prefill passes, the device tensors that carry it to the writer, and which
requests of a pass hold their whole prompt.

Its definitions are injected as they are written here (see __init__.py).
"""


try:
    import torch
except ImportError:  # the dump runs under PyTorch; the parts that need none are tested without it
    torch = None


def _pysplice_hs_stitch_how(batch):
    # Which identity links the chunks of one request across prefill passes, from the
    # fields this release's ForwardBatch has (see docs/sglang.md, Chunked prefill):
    # "rid": forward_batch.rids (0.5.10+), the same in every chunk. "kv": the request's
    # ReqToTokenPool row, req_to_token[slot, prefix - 1], holds the KV location of the
    # previous chunk's last token (its out_cache_loc): 0.4.6-0.5.9, whose slot is new
    # in every chunk up to 0.5.8.post1 and kept from 0.5.9. "slot": req_pool_indices
    # alone, for a batch with slots but no pool (kept slots only). None: no identity.
    if getattr(batch, "rids", None) is not None:
        return "rid"
    if getattr(batch, "req_pool_indices", None) is None or getattr(batch, "extend_prefix_lens", None) is None:
        return None
    if getattr(batch, "req_to_token_pool", None) is not None and getattr(batch, "out_cache_loc", None) is not None:
        return "kv" if getattr(batch, "extend_seq_lens", None) is not None else None
    return "slot"


def _pysplice_hs_stitch_keys(batch, how, take):
    # Device tensors for the writer to tell a continuation from a new request: gathers
    # launched here and copied with the rows (no host read in the forward). With rids,
    # the slot too where the batch has one (kept across chunks from 0.5.9): two prompts
    # given one rid are told apart by it.
    slots = getattr(batch, "req_pool_indices", None)
    if how == "rid":
        return dict(slots=slots[:take]) if isinstance(slots, torch.Tensor) and slots.shape[0] >= take else dict()
    slots = slots[:take]
    out = dict(slots=slots)
    if how == "kv":
        lens = batch.extend_seq_lens[:take]
        out["last_loc"] = batch.out_cache_loc[torch.cumsum(lens, 0) - 1]
        cols = (batch.extend_prefix_lens[:take] - 1).clamp(min=0)
        out["prev_loc"] = batch.req_to_token_pool.req_to_token[slots.long(), cols.long()]
    return out


def _pysplice_hs_complete(chunk, full, lens, prefix):
    # Per request: does this pass hold the whole prompt? Not when a prefix was
    # cached or computed by an earlier chunk (prefix_len > 0), nor when the prompt
    # goes on past this pass: forward_batch.orig_seq_lens (0.5.1+, `full`) holds the
    # full length, which also catches the first chunk (prefix_len == 0). Without it,
    # a pass that fills the chunk budget may have cut its last request: that one is
    # taken as incomplete.
    out = [not prefix or not prefix[i] for i in range(len(lens))]
    if full is not None and len(full) >= len(lens):
        for i, n in enumerate(lens):
            out[i] = out[i] and (prefix[i] if prefix else 0) + n >= int(full[i])
    elif chunk > 0 and sum(lens) >= chunk and any(lens):
        out[max(i for i, n in enumerate(lens) if n)] = False
    return out
