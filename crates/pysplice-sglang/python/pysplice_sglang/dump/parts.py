"""A chunked request of unknown length (before 0.5.1): its rows appended to hidden part files,
read back through memory maps as one sample.

Its definitions are injected as they are written here (see __init__.py).
"""

import os

try:
    import torch
except ImportError:  # the dump runs under PyTorch; the parts that need none are tested without it
    torch = None

from .files import _pysplice_hs_stem
from .stitch import _pysplice_hs_stitch_close
from .state import _pysplice_hs_serial


def _pysplice_hs_parts_add(state, entry, job, i, number):
    # A chunked request of unknown length (before 0.5.1: no orig_seq_lens): append
    # request i's rows of a queued pass to its part files (hidden, in the dump folder:
    # .<stem>_s<serial>.<ids|hidden|aux>.part.tmp, exclusive 0600, no symlink
    # followed), opened at its first chunk, whose file number the stitched sample
    # takes. Host memory holds one chunk at a time, never the request.
    import ctypes

    if entry["parts"] is None:
        if number is None:
            with state["lock"]:
                number = state["next"]
                state["next"] = number + 1
        entry["number"], entry["parts"], entry["serial"] = number, dict(), _pysplice_hs_serial()
    t, lens = job["tensors"], job["meta"]["lens"]
    begin = sum(lens[:i])
    end = begin + lens[i]
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_APPEND
    for key, rows in (("ids", t["ids"][begin:end].to(torch.long)), ("hidden", t["hidden"][begin:end]), ("aux", t["aux"][begin:end] if t["aux"] is not None else None)):
        if rows is None:
            continue
        rows = rows.contiguous()
        if key not in entry["parts"]:
            name = ".%s_s%d.%s.part.tmp" % (_pysplice_hs_stem(state), entry["serial"], key)
            entry["parts"][key] = (name, os.open(name, flags, 0o600, dir_fd=state["dir_fd"]))
            entry["shapes"][key] = (rows.dtype, tuple(rows.shape[1:]))
        elif entry["shapes"][key] != (rows.dtype, tuple(rows.shape[1:])):
            raise ValueError("a chunk of %s has %s rows, the request %s" % (key, (rows.dtype, tuple(rows.shape[1:])), entry["shapes"][key]))
        view = memoryview((ctypes.c_char * (rows.numel() * rows.element_size())).from_address(rows.data_ptr())).cast("B")
        while view:
            view = view[os.write(entry["parts"][key][1], view) :]
    entry["written"] += lens[i]


def _pysplice_hs_parts_sample(entry):
    # The held request as one sample, its tensors mapped from the part files
    # (file-backed pages, not anonymous memory: torch.save reads them from the page
    # cache), prefix_len 0 as for an unchunked prompt.
    rows, shapes = entry["written"], entry["shapes"]

    def mapped(key):
        dtype, tail = shapes[key]
        width = 1
        for d in tail:
            width *= d
        path = "/proc/self/fd/%d" % entry["parts"][key][1]
        return torch.from_file(path, shared=True, size=rows * width, dtype=dtype).view((rows,) + tail)

    sample = dict(
        input_ids=mapped("ids"),
        loss_mask=torch.ones(rows, dtype=torch.long),
        hidden_state=mapped("hidden").unsqueeze(0),
    )
    if "aux" in shapes:
        sample["aux_hidden_state"] = mapped("aux").unsqueeze(0)
    sample["layers_to_capture"] = entry["layers"]
    sample["prefix_len"] = 0
    sample["rid"] = entry["rid"]
    sample["provenance"] = entry["provenance"]
    return sample


def _pysplice_hs_parts_drop(state, entry):
    # Close and remove a held request's part files or its stitched file (best effort:
    # a name left behind is debris that the next start removes).
    for name, fd in (entry["parts"] or dict()).values():
        try:
            os.close(fd)
        except OSError:
            pass
        try:
            os.unlink(name, dir_fd=state["dir_fd"])
        except OSError:
            pass
    entry["parts"] = None
    if entry.get("stitch") is not None:
        _pysplice_hs_stitch_close(state, entry["stitch"])
