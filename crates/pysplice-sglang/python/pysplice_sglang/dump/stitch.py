"""A chunked request of known length (0.5.1+): one hidden file laid out as torch.save lays out the
sample, whose rows any writer thread puts at their offsets, published once complete.

Its definitions are injected as they are written here (see __init__.py).
"""

import errno
import os

try:
    import torch
except ImportError:  # the dump runs under PyTorch; the parts that need none are tested without it
    torch = None

from .archive import (
    _pysplice_hs_crc_combine,
    _pysplice_hs_pickle,
    _pysplice_hs_Stored,
    _pysplice_hs_zip_descriptor,
    _pysplice_hs_zip_end,
    _pysplice_hs_zip_layout,
)
from .files import _pysplice_hs_publish, _pysplice_hs_stem, _pysplice_hs_write
from .state import _pysplice_hs_Process, _pysplice_hs_serial


def _pysplice_hs_stitch_open(state, entry, job, i):
    # The file of a chunked request of known length (entry["total"] rows), created by
    # its first chunk's writer: hidden (.<stem>_s<serial>.stitch.tmp, exclusive 0600,
    # no symlink followed), of its final size, laid out as torch.save lays out the
    # sample (_pysplice_hs_zip_layout): data.pkl, the small records, loss_mask's ones
    # and every local header are written now; the rows of each chunk go to their
    # offsets as they come, and the data descriptors and the central directory (their
    # CRCs) when the last one is in. The rows go through a shared mapping of the file
    # where the folder gives one and reserves space (fallocate), else with pwrite (see
    # _pysplice_hs_stitch_put); either way a full disk is an error, as for any sample.
    import ctypes
    import mmap
    import zlib

    t, total = job["tensors"], entry["total"]
    shapes = dict(ids=(torch.long, ()), hidden=(t["hidden"].dtype, tuple(t["hidden"].shape[1:])))
    if t["aux"] is not None:
        shapes["aux"] = (t["aux"].dtype, tuple(t["aux"].shape[1:]))
    width = dict()
    for key, (dtype, tail) in shapes.items():
        n = 1
        for d in tail:
            n *= d
        width[key] = n
    stored = [("input_ids", "ids", (total,)), ("loss_mask", "mask", (total,)), ("hidden_state", "hidden", (1, total) + shapes["hidden"][1])]
    if "aux" in shapes:
        stored.append(("aux_hidden_state", "aux", (1, total) + shapes["aux"][1]))
    sample, tensors = dict(), []
    for k, (name, key, shape) in enumerate(stored):
        dtype = torch.long if key in ("ids", "mask") else shapes[key][0]
        sample[name] = _pysplice_hs_Stored(str(k), dtype, shape)
        tensors.append((key, sample[name]))
    sample.update(layers_to_capture=entry["layers"], prefix_len=0, rid=entry["rid"], provenance=entry["provenance"])
    pkl = _pysplice_hs_pickle(sample)
    ident = ("%040d" % int.from_bytes(os.urandom(17), "little"))[-40:].encode()
    small = [("data.pkl", pkl), (".format_version", b"1"), (".storage_alignment", b"64"), ("byteorder", b"little")]
    sizes = [(n, len(d)) for n, d in small]
    sizes += [("data/%d" % k, s.numel * s.dtype.itemsize) for k, (_, s) in enumerate(tensors)]
    sizes += [("version", 2), (".data/serialization_id", len(ident))]
    entries, at = _pysplice_hs_zip_layout(sizes)
    end = _pysplice_hs_zip_end(entries, [0] * len(entries), at)
    # A name already taken (a file or a link left there) is skipped for the next serial,
    # never followed or written over, as a sample's temporary is (_pysplice_hs_write).
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(1000):
        name = ".%s_s%d.stitch.tmp" % (_pysplice_hs_stem(state), _pysplice_hs_serial())
        try:
            fd = os.open(name, flags, 0o600, dir_fd=state["dir_fd"])
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError("no free name for a chunked request's file after 1000 tries")
    st = dict(name=name, fd=fd, map=None, ref=None, base=None, entries=entries, at=at, size=at + len(end))
    st.update(shapes=shapes, crcs=dict(), data=dict(), row=dict(), record=dict(), reserve=None)
    try:
        os.ftruncate(fd, st["size"])
        # The probe: fallocate of the first page (refused where the folder has none: EOPNOTSUPP)
        # and a shared mapping of the file (refused where it has none: ENODEV, EINVAL, ...).
        # Only both together: a store into a page the folder has no room for is a SIGBUS.
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
            st["reserve"] = libc.fallocate
            _pysplice_hs_stitch_reserve(st, 0, min(st["size"], 4096))
            st["map"] = mmap.mmap(fd, st["size"])
            st["ref"] = ctypes.c_char.from_buffer(st["map"])
            st["base"] = ctypes.addressof(st["ref"])
        except (AttributeError, OSError, ValueError) as exc:
            if getattr(exc, "errno", None) == errno.ENOSPC:
                raise
            _pysplice_hs_stitch_unmap(st)
            st["reserve"] = None

        def put(data, offset):
            view = memoryview(data).cast("B")
            while view:
                n = os.pwrite(fd, view, offset)
                view, offset = view[n:], offset + n

        blobs = dict(small + [("version", b"3\n"), (".data/serialization_id", ident)])
        keys = [key for key, _ in tensors]
        for k, e in enumerate(entries):
            record = e["name"].decode()[len("archive/") :]
            put(e["head"], e["header"])
            if record in blobs:
                put(blobs[record] + _pysplice_hs_zip_descriptor(e, zlib.crc32(blobs[record])), e["data"])
                st["crcs"][k] = zlib.crc32(blobs[record])
                continue
            key = keys[int(record.split("/")[1])]
            st["record"][key] = k
            if key == "mask":  # all ones, a block at a time
                block = torch.ones(min(total, 8192), dtype=torch.long).numpy().tobytes()
                crc, done = 0, 0
                while done < total:
                    n = min(total - done, 8192)
                    put(block[: n * 8], e["data"] + done * 8)
                    crc = zlib.crc32(block[: n * 8], crc)
                    done += n
                put(_pysplice_hs_zip_descriptor(e, crc), e["data"] + e["size"])
                st["crcs"][k] = crc
            else:
                st["data"][key] = e["data"]
                st["row"][key] = width[key] * (8 if key == "ids" else shapes[key][0].itemsize)
                st["crcs"][key] = []
    except BaseException:
        _pysplice_hs_stitch_close(state, st)
        raise
    return st


def _pysplice_hs_stitch_add(entry, job, i):
    # Request i's rows of a queued pass at their place in the request's file, with the
    # CRC of each piece (combined when the sample is published). Host memory: the ring,
    # plus this chunk's ids as int64.
    t, meta = job["tensors"], job["meta"]
    lens, st = meta["lens"], entry["stitch"]
    begin = sum(lens[:i])
    p, n = meta["prefix"][i] if meta["prefix"] is not None else 0, lens[i]
    if p + n > entry["total"]:
        raise ValueError("a chunk of rows %d-%d of a prompt of %d" % (p, p + n, entry["total"]))
    for key, rows in (("ids", t["ids"][begin : begin + n].to(torch.long)), ("hidden", t["hidden"][begin : begin + n]), ("aux", t["aux"][begin : begin + n] if t["aux"] is not None else None)):
        if (rows is None) != (key not in st["shapes"]):
            raise ValueError("a chunk has %s where the request's first had %s" % ("no " + key if rows is None else key, "none"))
        if rows is None:
            continue
        if (rows.dtype, tuple(rows.shape[1:])) != st["shapes"][key]:
            raise ValueError("a chunk of %s has %s rows, the request %s" % (key, (rows.dtype, tuple(rows.shape[1:])), st["shapes"][key]))
        _pysplice_hs_stitch_put(st, key, p, rows.contiguous())


def _pysplice_hs_stitch_put(st, key, p, rows):
    # Rows from row p on. Through the file's mapping: their pages reserved first, in one
    # call (fallocate: a full folder is ENOSPC here, never a SIGBUS in a store; it takes
    # the file's lock, so once per chunk, not per piece: 3.4 GB/s against 4.3 on an H100),
    # then in pieces of 8 MiB spread over the process's stitch threads
    # (_pysplice_hs_stitch_serve), stored and CRC'd there; the CRCs combined here in
    # order, meanwhile. Stores through one mapping do not wait for each other: tmpfs
    # serialises pwrite of one file on its lock (H100: 2-2.8 GB/s by one thread, no more
    # by four; see docs/benchmarks.md). Without a mapping, pwrite in pieces of 8 MiB, each
    # CRC'd right after it is written (still in the cache): pwrite and crc32 release the
    # GIL, so writers run side by side, the CRCs beside the writes.
    import ctypes
    import zlib

    size = rows.numel() * rows.element_size()
    if not size:
        return
    at = st["data"][key] + p * st["row"][key]
    fd, src, piece = st["fd"], rows.data_ptr(), 8 << 20
    crc, done = 0, 0
    if st["base"] is not None:
        _pysplice_hs_stitch_reserve(st, at, size)
        crc, done = _pysplice_hs_stitch_run(st, at, src, size, piece), size
    while done < size:
        n = min(piece, size - done)
        block = (ctypes.c_char * n).from_address(src + done)
        view, offset = memoryview(block).cast("B"), at + done
        while view:
            k = os.pwrite(fd, view, offset)
            view, offset = view[k:], offset + k
        crc = zlib.crc32(block, crc)
        done += n
    st["crcs"][key].append((p * st["row"][key], crc, size))  # list.append: atomic


def _pysplice_hs_stitch_run(st, at, src, size, piece):
    # The pieces of `size` bytes from address src to file offset `at`, handed to the stitch
    # threads (started once per process); their CRCs combined in order as they are done.
    # Returns only once every piece is done, so that no store outlives the op (the mapping
    # goes after the request's last op); the first failure is raised then.
    import queue
    import threading

    pool = _pysplice_hs_Process.stitchers
    if not pool:
        with _pysplice_hs_Process.stitch_lock:
            if not pool:
                tasks = queue.SimpleQueue()
                for k in range(_pysplice_hs_Process.stitch_threads):
                    name = "pysplice-hs-dump-stitch-%d" % k
                    threading.Thread(target=_pysplice_hs_stitch_serve, args=(tasks,), name=name, daemon=True).start()
                pool.append(tasks)
    cond = threading.Condition()
    pieces = [dict(st=st, at=at + k, src=src + k, n=min(piece, size - k), cond=cond, crc=None, error=None, done=False) for k in range(0, size, piece)]
    for task in pieces:
        pool[0].put(task)
    crc, error = 0, None
    for task in pieces:
        with cond:
            while not task["done"]:
                cond.wait()
        error = error or task["error"]
        if error is None:
            crc = _pysplice_hs_crc_combine(crc, task["crc"], task["n"])
    if error is not None:
        raise error
    return crc


def _pysplice_hs_stitch_serve(tasks):
    # A stitch thread: a piece at a time (its pages reserved), copied into the mapping and
    # CRC'd from its source, 2 MiB at a time (still in the cache). memmove and crc32
    # release the GIL.
    import ctypes
    import zlib

    while True:
        task = tasks.get()
        try:
            st, n, crc = task["st"], task["n"], 0
            for k in range(0, n, 2 << 20):
                m = min(2 << 20, n - k)
                ctypes.memmove(st["base"] + task["at"] + k, task["src"] + k, m)
                crc = zlib.crc32((ctypes.c_char * m).from_address(task["src"] + k), crc)
            task["crc"] = crc
        except BaseException as exc:
            task["error"] = exc
        with task["cond"]:
            task["done"] = True
            task["cond"].notify_all()


def _pysplice_hs_stitch_reserve(st, at, n):
    # fallocate(2) of bytes [at, at + n) of the request's file (mode 0: the size stays).
    if st["reserve"](st["fd"], 0, at, n) != 0:
        import ctypes

        code = ctypes.get_errno()
        raise OSError(code, "fallocate: %s" % os.strerror(code))


def _pysplice_hs_stitch_publish(state, entry):
    # All ops of the request are done. Complete (the last chunk came, every row is in):
    # the data descriptors and the central directory with the combined CRCs, synced and
    # linked to its name (the first chunk's number, else the next free one). Else a
    # .ckpt.partial of the rows it has, saved from the mapped file.
    import ctypes
    import mmap

    st, rows = entry["stitch"], entry["rows"]
    if entry["final"] == ".ckpt" and rows == entry["total"]:
        crcs = []
        for k, e in enumerate(st["entries"]):
            key = next((key for key, rec in st["record"].items() if rec == k and key in st["data"]), None)
            if key is None:
                crcs.append(st["crcs"][k])
                continue
            crc, at = 0, 0
            for offset, piece, size in sorted(st["crcs"][key]):
                if offset != at:
                    raise ValueError("rows of %s missing at byte %d" % (key, at))
                crc, at = _pysplice_hs_crc_combine(crc, piece, size), at + size
            if at != e["size"]:
                raise ValueError("%s holds %d of %d bytes" % (key, at, e["size"]))
            os.pwrite(st["fd"], _pysplice_hs_zip_descriptor(e, crc), e["data"] + e["size"])
            crcs.append(crc)
        end = _pysplice_hs_zip_end(st["entries"], crcs, st["at"])
        if os.pwrite(st["fd"], end, st["at"]) != len(end):
            raise OSError(errno.EIO, "short write of the central directory")
        _pysplice_hs_stitch_unmap(st)
        os.fsync(st["fd"])
        _pysplice_hs_publish_free(state, st["name"], ".ckpt", entry["number"])
        return
    # mapped to be read: the rows stay page cache of the file, never anonymous memory
    if st["map"] is None:
        st["map"] = mmap.mmap(st["fd"], st["size"])
        st["ref"] = ctypes.c_char.from_buffer(st["map"])
        st["base"] = ctypes.addressof(st["ref"])
    base = st["base"]
    sample = dict()
    for name, key in (("input_ids", "ids"), ("hidden_state", "hidden"), ("aux_hidden_state", "aux")):
        if key == "aux" and key not in st["shapes"]:
            continue
        if name == "hidden_state":
            sample["loss_mask"] = torch.ones(rows, dtype=torch.long)
        dtype, tail = st["shapes"][key]
        raw = (ctypes.c_char * (rows * st["row"][key])).from_address(base + st["data"][key])
        t = torch.frombuffer(raw, dtype=dtype).view((rows,) + tail) if rows else torch.empty((0,) + tail, dtype=dtype)
        sample[name] = t if key == "ids" else t.unsqueeze(0)
    sample.update(layers_to_capture=entry["layers"], prefix_len=0, rid=entry["rid"], provenance=entry["provenance"])
    _pysplice_hs_write(state, sample, ".ckpt.partial", entry["number"])


def _pysplice_hs_stitch_unmap(st):
    # The mapping's export goes first (a mapping with one cannot be closed).
    st["ref"] = st["base"] = None
    if st["map"] is not None:
        st["map"].close()
        st["map"] = None


def _pysplice_hs_stitch_close(state, st):
    # Unmap, close and remove a request's file (best effort: a name left behind is
    # debris that the next start removes).
    try:
        _pysplice_hs_stitch_unmap(st)
    except (BufferError, OSError, ValueError):
        pass
    if st["fd"] is not None:
        try:
            os.close(st["fd"])
        except OSError:
            pass
        st["fd"] = None
        try:
            os.unlink(st["name"], dir_fd=state["dir_fd"])
        except OSError:
            pass


def _pysplice_hs_publish_free(state, tmp, suffix, number):
    # Give the synced temporary `tmp` the name of file `number`, or of the next free
    # one (taken names are skipped, never overwritten); the name given.
    for _ in range(1000):
        if number is not None:
            n, number = number, None
        else:
            with state["lock"]:
                n = state["next"]
                state["next"] = n + 1
        name = "%s_%08d%s" % (_pysplice_hs_stem(state), n, suffix)
        with state["publish"]:
            if state.get("failed"):
                raise RuntimeError("the dump turned off while this sample was written")
            try:
                published = _pysplice_hs_publish(state, tmp, name)
            except BaseException as exc:
                state["failed"] = exc
                raise
        if published:
            if state.get("sink") is not None:  # the store sink takes it from here
                state["sink"].offer(name)
            return name
    raise FileExistsError("no free file name after 1000 tries")
