"""What the model's forward calls: the prefill-pass filter and the hand-over of a pass's rows to
the writer; whatever fails turns the dump off and serving goes on.

Its definitions are injected as they are written here (see __init__.py).
"""

import logging
import os

try:
    import torch
except ImportError:  # the dump runs under PyTorch; the parts that need none are tested without it
    torch = None

from .chunks import _pysplice_hs_stitch_how, _pysplice_hs_stitch_keys
from .files import _pysplice_hs_open_dir
from .parallel import _pysplice_hs_chunk_size, _pysplice_hs_ranks
from .provenance import _pysplice_hs_provenance
from .sample import _pysplice_hs_probe
from .writer import _pysplice_hs_Writer


def _pysplice_hs_dump(model, input_ids, batch, value):
    # Called with the value DeepseekV2Model.forward is about to return; returns it as is.
    try:
        _pysplice_hs_dump_batch(model, input_ids, batch, value)
    except Exception as exc:
        if not getattr(model, "_hs_dump_warned", False):
            model._hs_dump_warned = True
            logging.getLogger(__name__).warning(
                "hidden state dump to %s failed, serving goes on (later failures are not logged): %r",
                model._hs_dump_dir,
                exc,
            )
    return value


def _pysplice_hs_dump_batch(model, input_ids, batch, value):
    # Prefill passes only. ForwardMode.is_extend() is also true for MIXED,
    # DRAFT_EXTEND, TARGET_VERIFY, SPLIT_PREFILL..., so compare the member's name
    # (0.2.x/0.3.x also have a PREFILL member). Decode, idle, verify and the dummy
    # passes of autotune / graph capture (DECODE) are skipped here.
    if getattr(batch.forward_mode, "name", None) not in ("EXTEND", "PREFILL"):
        return
    # Under DP attention (0.5.1+), ForwardBatch.prepare_mlp_sync_batch relabels IDLE,
    # DECODE, TARGET_VERIFY and DRAFT_EXTEND batches as EXTEND when another DP rank
    # extends with MAX_LEN padding, keeping the real mode in _original_forward_mode
    # (an idle rank then carries one fabricated request of padding tokens, a decoding
    # one 1-token extends): only a batch that was EXTEND before is a prefill.
    original = getattr(batch, "_original_forward_mode", None)
    if original is not None and getattr(original, "name", None) not in ("EXTEND", "PREFILL"):
        return
    # Prefill CUDA-graph capture or torch.compile tracing (piecewise prefill graphs
    # are on by default in 0.5.10-0.5.13): dummy batches, and a host copy would
    # invalidate the capture. Only eager passes dump.
    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        return
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    if compiling is not None and compiling():
        return
    # value: the hidden states, or (hidden states, aux) when aux layers were captured;
    # aux is a list of [T, H] up to 0.5.16 and one packed [T, K*H] tensor from 0.5.17.
    # Anything else (PPProxyTensors of a non-last pipeline rank) is left alone.
    hidden, aux = value if isinstance(value, tuple) and len(value) == 2 else (value, None)
    if not isinstance(hidden, torch.Tensor):
        return
    state = model._hs_dump_state
    if state["writer"] is None:  # first prefill pass: settle the rank and chunking once
        tp_rank, dp_rank = _pysplice_hs_ranks()
        state.update(writer=tp_rank == 0, dp_rank=dp_rank, chunk=_pysplice_hs_chunk_size())
        if state["writer"]:  # what every sample of this model says about its origin
            state["provenance"] = _pysplice_hs_provenance(model, hidden, aux)
        if state["writer"] and state["chunk"] > 0 and _pysplice_hs_stitch_how(batch) is None:
            logging.getLogger(__name__).warning(
                "hidden state dump: chunked prefill is on (chunk %d tokens); passes of a cut "
                "prompt are written as .ckpt.partial where this release shows the cut. "
                "Launch with --chunked-prefill-size -1 for complete samples",
                state["chunk"],
            )
    # The final hidden states are replicated over the attention-TP group: one writer
    # per attention-DP group, each DP group serving its own requests.
    if not state["writer"]:
        return
    if state["cap"] is not None and model._hs_dump_count >= state["cap"]:
        return
    lens = getattr(batch, "extend_seq_lens_cpu", None)
    if lens is None:  # 0.2.6 has only the device tensor
        lens = batch.extend_seq_lens.tolist()
    lens = [int(n) for n in lens]
    total = sum(lens)
    if total == 0:
        return
    # Token ids: forward_batch.input_ids (0.3.3+) also holds them when the argument
    # is None (multimodal wrappers such as Kimi-K2.5 pass input_embeds only); the
    # older InputMetadata has no input_ids, so fall back to the argument.
    ids = getattr(batch, "input_ids", None)
    if ids is None:
        ids = input_ids
    if ids is None:
        raise ValueError("no token ids in the batch or the arguments")
    if aux is not None and not isinstance(aux, torch.Tensor):
        aux = torch.cat(list(aux), dim=-1) if len(aux) else None
    for name, rows in (("hidden states", hidden), ("input ids", ids), ("aux hidden states", aux)):
        if rows is not None and rows.shape[0] < total:
            raise ValueError("%s have %d rows, the batch needs %d" % (name, rows.shape[0], total))
    if state["queue"] is None:
        # Once: a folder or writer that cannot be set up turns the dump off (no retry
        # per pass, no descriptor left open).
        try:
            state["dir_fd"] = _pysplice_hs_open_dir(model._hs_dump_dir)
            state["queue"] = _pysplice_hs_Writer(state, model._hs_dump_dir)
        except Exception as exc:
            if state["dir_fd"] is not None:
                os.close(state["dir_fd"])
                state["dir_fd"] = None
            _pysplice_hs_off(model, exc)
            return
    queue = state["queue"]
    if queue.error is not None:  # the writer died and said so once: dump off
        model._hs_dump_dir = None
        return
    prefix = getattr(batch, "extend_prefix_lens_cpu", None)  # 0.3.6+
    if prefix is None:  # older releases keep device tensors; 0.2.6 only seq_lens
        lens_t = getattr(batch, "extend_seq_lens", None)
        prefix_t = getattr(batch, "extend_prefix_lens", None)
        if prefix_t is None and lens_t is not None and getattr(batch, "seq_lens", None) is not None:
            prefix_t = batch.seq_lens - lens_t
        prefix = prefix_t.tolist() if prefix_t is not None else None
    prefix = [int(p) for p in prefix] if prefix is not None else None
    # Each request's full prompt length (0.5.1+), a device tensor: copied with the rows,
    # read by the writer, so the forward never waits for it.
    full = getattr(batch, "orig_seq_lens", None)
    if isinstance(full, torch.Tensor) and full.shape[0] < len(lens):
        full = None
    rids = getattr(batch, "rids", None)  # 0.5.10+
    layers = getattr(model, "layers_to_capture", None)
    layers = [int(i) for i in layers] if aux is not None and layers else None
    # How the writer tells the chunks of one request apart across passes (None: it
    # cannot, and a cut prompt's passes stay .ckpt.partial).
    how = _pysplice_hs_stitch_how(batch) if prefix is not None else None
    if how != "rid" and full is None and not state["chunk"]:
        how = None  # no orig_seq_lens and no chunk size (0.3.x): a cut cannot be told
    # The cap counts samples (files): a request handed to the writer, but not a chunk
    # that continues an earlier pass's request (where chunks are stitched: the head of
    # the pass with prefix_len > 0, as the scheduler puts a continuation first). The
    # rest of the pass is dropped.
    probes = dict(rids=list(rids)) if rids is not None else dict(rids=None)
    starts = [i for i, n in enumerate(lens) if n and not (how is not None and i == 0 and prefix[i] > 0)]
    starts = [i for i in starts if not _pysplice_hs_probe(probes, i)]
    if all(not n or _pysplice_hs_probe(probes, i) for i, n in enumerate(lens)):
        return  # health probes only: nothing to write, nothing queued
    take = len(lens)
    if state["cap"] is not None:
        left = state["cap"] - model._hs_dump_count
        nonzero = starts
        if len(nonzero) > left:
            take = nonzero[left] if left > 0 else 0
    rows = sum(lens[:take])
    if rows == 0:
        return
    # Rows past sum(lens) are DP / MLP-sync padding.
    meta = dict(
        lens=lens[:take],
        prefix=prefix[:take] if prefix is not None else None,
        rids=list(rids[:take]) if rids is not None else None,
        layers=layers,
        chunk=state["chunk"],
        stitch=how,
        provenance=state["provenance"],
    )
    tensors = dict(hidden=hidden[:rows], ids=ids[:rows], aux=aux[:rows] if aux is not None else None)
    if isinstance(full, torch.Tensor):
        tensors["full"] = full[:take]
    elif full is not None:
        meta["full"] = [int(n) for n in list(full)[:take]]
    if how is not None:
        tensors.update(_pysplice_hs_stitch_keys(batch, how, take))
    model._hs_dump_count += sum(1 for i in starts if i < take)
    # The pass that reaches the cap is the last one handed over: the writer ends the
    # requests it holds unfinished as .ckpt.partial after it.
    meta["end"] = state["cap"] is not None and model._hs_dump_count >= state["cap"]
    if not queue.submit(tensors, meta):
        model._hs_dump_dir = None


def _pysplice_hs_off(model, exc):
    # Turn the dump off for this model with one warning: the forward is back to
    # one attribute test.
    logging.getLogger(__name__).warning(
        "hidden state dump to %s turned off: %s", model._hs_dump_dir, exc
    )
    model._hs_dump_warned = True
    model._hs_dump_dir = None
