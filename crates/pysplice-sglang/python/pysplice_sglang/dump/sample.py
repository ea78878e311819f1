"""One request of a queued pass as a sample dict, its tensors viewing the host rows.

Its definitions are injected as they are written here (see __init__.py).
"""


try:
    import torch
except ImportError:  # the dump runs under PyTorch; the parts that need none are tested without it
    torch = None

from .chunks import _pysplice_hs_complete


def _pysplice_hs_sample(job, i):
    # Request i of a queued pass, from its host rows: (sample, file suffix).
    t, meta = job["tensors"], job["meta"]
    lens, prefix, rids = meta["lens"], meta["prefix"], meta["rids"]
    full = t["full"].tolist() if "full" in t else meta.get("full")
    complete = _pysplice_hs_complete(meta["chunk"], full, lens, prefix)
    begin = sum(lens[:i])
    end = begin + lens[i]
    sample = dict(
        input_ids=t["ids"][begin:end].to(torch.long, copy=True),
        loss_mask=torch.ones(lens[i], dtype=torch.long),
        hidden_state=_pysplice_hs_alone(t["hidden"][begin:end]).unsqueeze(0),
    )
    if t["aux"] is not None:
        sample["aux_hidden_state"] = _pysplice_hs_alone(t["aux"][begin:end]).unsqueeze(0)
    sample["layers_to_capture"] = meta["layers"]
    sample["prefix_len"] = prefix[i] if prefix is not None else None
    sample["rid"] = rids[i] if rids is not None and i < len(rids) else None
    sample["provenance"] = meta.get("provenance")
    # Incomplete samples (a cached or chunked prefix, or a prompt cut by chunked
    # prefill) get a suffix that training readers listing *.ckpt do not pick up.
    return sample, ".ckpt" if complete[i] else ".ckpt.partial"


def _pysplice_hs_probe(meta, i):
    # Request i of a pass is a server's own health probe, never a sample: SGLang's /health and
    # /health_generate prefill one token under a rid of "HEALTH_CHECK_<uuid>" (0.5.x; where the
    # batch carries rids, 0.5.10+), and a router or orchestrator calls them every few seconds.
    rids = meta.get("rids")
    rid = rids[i] if rids is not None and i < len(rids) else None
    return isinstance(rid, str) and rid.startswith("HEALTH_CHECK")


def _pysplice_hs_probe_row(job, i):
    # The same probe where the batch carries no rids (before 0.5.10): a whole prompt of the one
    # token id 0, SGLang's `input_ids=[0]`. One token is no training sample either way.
    meta = job["meta"]
    if meta.get("rids") is not None or meta["lens"][i] != 1:
        return False
    if meta["prefix"] is not None and meta["prefix"][i] != 0:
        return False
    return int(job["tensors"]["ids"][sum(meta["lens"][:i])]) == 0


def _pysplice_hs_alone(rows):
    # The same memory as a tensor with a storage of its own, so that torch.save
    # writes these rows only, not the whole host buffer, and without a copy.
    import ctypes

    if not rows.is_contiguous():  # a copy is compact already
        return rows.contiguous()
    raw = (ctypes.c_char * (rows.numel() * rows.element_size())).from_address(rows.data_ptr())
    return torch.frombuffer(raw, dtype=rows.dtype).view(rows.shape)
