"""The writer: a host ring buffer the forward copies each pass into, writer threads that turn its
requests into files in order (stitching chunked requests), and the status file that says what
is queued.

Its definitions are injected as they are written here (see __init__.py).
"""

import logging
import os

try:
    import torch
except ImportError:  # the dump runs under PyTorch; the parts that need none are tested without it
    torch = None

from .debris import _pysplice_hs_clean
from .files import _pysplice_hs_write
from .parts import _pysplice_hs_parts_add, _pysplice_hs_parts_drop, _pysplice_hs_parts_sample
from .ring import _pysplice_hs_pin, _pysplice_hs_size
from .sample import _pysplice_hs_probe, _pysplice_hs_probe_row, _pysplice_hs_sample
from .settings import _pysplice_hs_show
from .sink import _pysplice_hs_Sink
from .state import _pysplice_hs_Process, _pysplice_hs_serial
from .status import _pysplice_hs_identity
from .stitch import _pysplice_hs_stitch_add, _pysplice_hs_stitch_open, _pysplice_hs_stitch_publish


class _pysplice_hs_Writer:
    # Takes the dump off the forward's critical path. The forward copies a pass's
    # rows into a host ring buffer (pinned; on a side CUDA stream, with one event)
    # and returns. Writer threads (one file each at a time: a single torch.save
    # stream is slower than the disk) wait for the event and write the samples,
    # taking requests and file numbers in order. The ring is the host memory budget
    # (${queue_env} MiB; it starts small and grows as passes need): when it is full
    # the forward waits, and nothing is dropped. The ring is allocated and pinned by
    # a thread of its own (pinning takes about a second per GiB); while it cannot
    # hold a pass, the forward copies that pass to pageable memory beside it, within
    # the same budget. A pass larger than the budget is written by the forward itself
    # once the queue is empty. Anything that fails in a writer logs one warning and
    # turns the dump off; queued passes are dropped.
    #
    # A status file in the folder (hidden: .hs_dump_status_<who>_<serial>.json) says how
    # many passes were queued, written and dropped, rewritten (atomically) as they change:
    # SGLang stops its scheduler processes with SIGKILL, so a server must only be
    # stopped once every status file shows nothing queued. It also proves which
    # hidden temporaries a process left: the next start removes those of processes
    # that are gone. It is bookkeeping: a write of it that fails is tried again, and
    # never turns the dump off.

    threads = 4

    def __init__(self, state, where):
        import atexit
        import collections
        import threading

        self.state, self.where = state, where
        self.budget = state["budget"]
        self.ring, self.stream, self.registered = None, None, False
        # host bytes: a ring given up (until its passes are written), a ring being
        # built, and pageable copies of passes waiting beside the ring
        self.retiring, self.growing, self.resizing, self.spilled = 0, 0, False, 0
        self.jobs = collections.deque()  # FIFO; each holds its ring region
        self.cond = threading.Condition()
        state["lock"] = threading.Lock()  # the file counter
        state["publish"] = threading.Lock()
        self.error, self.closed, self.waits, self.big_warned = None, False, 0, False
        self.queued = self.written = self.dropped = self.files = self.version = self.busy = self.reported = 0
        # Chunked requests between passes (see _plan): held in their files, keyed by
        # request; passes are planned one at a time, in order (seq, planned).
        self.held, self.seq, self.planned, self.lost = dict(), 0, 0, 0
        self.live = dict()  # id: every request with its files open (held or finishing)
        self.phase, self.status_lock, self.cleaned = "running", threading.Lock(), threading.Event()
        self.me = _pysplice_hs_identity()
        self.serial = _pysplice_hs_serial()
        self.status = ".hs_dump_status_dp%d_pid%d_%s_%d.json" % (state["dp_rank"], os.getpid(), state["token"], self.serial)
        _pysplice_hs_Process.tokens.add(state["token"])
        self.status_warned = False
        self.sink = None
        try:  # before any temporary: it marks them as this process's
            self._write_status()
        except Exception as exc:  # bookkeeping: the status thread tries again
            self._status_failed(exc)
        early = state.pop("early", None)
        if early is not None:  # the ring built when the model was (_pysplice_hs_ring_early)
            with self.cond:
                self._resize(early["size"], True, early)
        # The store sink (${sink_env}): complete samples move on from the folder.
        if state.get("sink_setting") is not None:
            self.sink = state["sink"] = _pysplice_hs_Sink(state, state["sink_setting"], self._sink_changed)
        self.workers = [
            threading.Thread(target=self._run, name="pysplice-hs-dump-%d" % k, daemon=True)
            for k in range(self.threads)
        ]
        self.reporter = threading.Thread(target=self._report, name="pysplice-hs-dump-status", daemon=True)
        for worker in self.workers + [self.reporter]:
            worker.start()
        atexit.register(self.close)

    def submit(self, tensors, meta):
        # Queue one pass; False when the writer is dead (the caller turns the dump off).
        parts, need = [], 0
        for key in ("hidden", "ids", "aux", "full", "slots", "last_loc", "prev_loc"):
            t = tensors.get(key)
            if t is not None:
                parts.append((key, t, need))
                need += (t.numel() * t.element_size() + 511) // 512 * 512
        if need > self.budget:
            return self._write_now(tensors, meta, need)
        cuda = tensors["hidden"].is_cuda
        place = self._reserve(need, cuda)
        if place is None:
            return False
        ring, start = place
        host = dict(aux=None)
        event = None
        if ring is None:  # beside the ring (being grown): a pageable copy, made now
            try:
                for key, t, _ in parts:
                    # Fault the pages in first (fill_ runs on all intra-op threads): a copy
                    # into fresh pages faults them one by one and takes about 9x as long.
                    host[key] = torch.empty(t.shape, dtype=t.dtype).fill_(0)
                    host[key].copy_(t.detach())
            except BaseException:
                with self.cond:
                    self.spilled -= need
                    self.cond.notify_all()
                raise
        else:
            for key, t, at in parts:
                nbytes = t.numel() * t.element_size()
                host[key] = ring[start + at : start + at + nbytes].view(t.dtype).view(t.shape)
            if cuda:
                if self.stream is None:
                    self.stream = torch.cuda.Stream(device=tensors["hidden"].device)
                self.stream.wait_stream(torch.cuda.current_stream(tensors["hidden"].device))
                with torch.cuda.stream(self.stream):
                    for key, t, _ in parts:
                        if t.is_cuda:
                            host[key].copy_(t.detach(), non_blocking=True)
                            # the forward's memory must outlive the copy on the side stream
                            t.record_stream(self.stream)
                        else:  # a host tensor in the batch (e.g. lengths kept on the CPU)
                            host[key].copy_(t.detach())
                    event = torch.cuda.Event()
                    event.record(self.stream)
            else:
                for key, t, _ in parts:
                    host[key].copy_(t.detach())
        todo = [i for i, n in enumerate(meta["lens"]) if n and not _pysplice_hs_probe(meta, i)]
        job = dict(
            tensors=host,
            meta=meta,
            event=event,
            ring=ring,
            region=(start, start + need) if ring is not None else None,
            spill=need if ring is None else 0,
            todo=todo,
            left=len(todo),
            plan=None,
        )
        with self.cond:
            job["seq"], self.seq = self.seq, self.seq + 1
            self.jobs.append(job)
            self.queued += 1
            self.version += 1
            self.cond.notify_all()
        return True

    def _reserve(self, need, cuda):
        # Where the forward puts `need` bytes: (ring, offset), or (None, 0) for a
        # pageable copy beside the ring while the ring cannot hold the pass (a bigger
        # one is built meanwhile, off the forward). Waits while the ring is full or host
        # memory is at the budget (backpressure). None when the writer is dead.
        with self.cond:
            while True:
                if self.error is not None:
                    return None
                cap = self.ring.numel() if self.ring is not None else 0
                if need <= cap:
                    at = self._fit(need, cap)
                    if at is not None:
                        return self.ring, at
                else:
                    if not self.resizing:
                        size = min(self.budget - need, max(need * 4, cap * 2, 8 << 20))
                        if size >= need or cap + need > self.budget:
                            # a ring that can never hold it beside this pass is given up
                            self._resize(size if size >= need else 0, cuda)
                            cap = 0
                    if cap + self.retiring + self.growing + self.spilled + need <= self.budget:
                        self.spilled += need
                        return None, 0
                self.waits += 1  # full, or too small: wait for the writers (or the ring)
                self.cond.wait()

    def _fit(self, need, cap):
        # First free offset for `need` bytes. Regions are taken and freed in order; only
        # the passes in the current ring count (others are beside it or in an old one).
        mine = [job["region"] for job in self.jobs if job["ring"] is self.ring]
        if not mine:
            return 0
        tail, head = mine[0][0], mine[-1][1]
        if head > tail:  # free: [head, cap) and [0, tail)
            if head + need <= cap:
                return head
            return 0 if need <= tail else None
        return head if head + need <= tail else None  # wrapped: free is [head, tail)

    def _resize(self, size, cuda, early=None):
        # Under the lock: give up the current ring and have a new one of `size` bytes
        # (none when 0) built by a thread of its own, not by the forward (or the one
        # `early` is building, adopted once built).
        import threading

        old, registered = self.ring, self.registered
        self.ring, self.registered, self.resizing = None, False, True
        self.retiring += old.numel() if old is not None else 0
        self.growing = size
        threading.Thread(target=self._grow, args=(old, registered, size, cuda, early), name="pysplice-hs-dump-ring", daemon=True).start()

    def _grow(self, old, registered, size, cuda, early=None):
        try:
            with self.cond:  # the old ring goes once no queued pass is in it
                while old is not None and self.error is None and any(job["ring"] is old for job in self.jobs):
                    self.cond.wait()
            freed = old.numel() if old is not None else 0
            if old is not None and registered:
                try:
                    torch.cuda.cudart().cudaHostUnregister(old.data_ptr())
                except Exception:
                    pass
            del old
            ring, registered = None, False
            if early is not None:
                early["done"].wait()
                ring, registered = early["ring"], early["registered"]
            elif size:
                ring = torch.empty(size, dtype=torch.uint8)
                if cuda:
                    # Pin exactly `size` bytes; PyTorch's pinned allocator would round up
                    # to a power of two and keep freed blocks cached.
                    registered = _pysplice_hs_pin(ring)
                    if not registered:
                        ring = torch.empty(size, dtype=torch.uint8, pin_memory=True)
            with self.cond:
                self.retiring -= freed
                self.ring, self.registered = ring, registered
                self.growing, self.resizing = 0, False
                self.cond.notify_all()
        except BaseException as exc:
            self._fail(exc)

    def _write_now(self, tensors, meta, need):
        # A pass larger than the whole budget: wait for the queue, then write it from
        # the forward (pageable copies), so that files stay in order.
        with self.cond:
            while self.jobs and self.error is None:
                self.waits += 1
                self.cond.wait()
            if self.error is not None:
                return False
            self.queued += 1
            self.version += 1
            seq, self.seq = self.seq, self.seq + 1
            self.cond.notify_all()
        if not self.big_warned:
            self.big_warned = True
            logging.getLogger(__name__).warning(
                "hidden state dump: a pass of %s exceeds %s=%s (%s) and is written "
                "while the forward waits; raise the budget to keep the dump off the forward",
                _pysplice_hs_size(need),
                "{queue_env}",
                _pysplice_hs_show(self.state["budget_raw"]),
                _pysplice_hs_size(self.budget),
            )
        todo = [i for i, n in enumerate(meta["lens"]) if n and not _pysplice_hs_probe(meta, i)]
        job = dict(tensors=dict((k, t.detach().cpu() if t is not None else None) for k, t in tensors.items()), meta=meta)
        job.update(todo=todo, left=len(todo), plan=None, seq=seq)
        try:
            self._order(job)
            while job["todo"]:  # the pass's requests, then what its plan ended
                wrote = self._do(job, job["todo"].pop(0), None)
                with self.cond:
                    self.files += wrote
        except BaseException as exc:
            self._fail(exc)
            return False
        with self.cond:
            self.written += 1
            self.version += 1
            self.cond.notify_all()
        return True

    def _next(self):
        # The next request to write, in order, with its file number reserved now.
        with self.cond:
            while True:
                if self.error is not None:
                    return None
                for job in self.jobs:
                    if job["todo"]:
                        with self.state["lock"]:
                            number = self.state["next"]
                            self.state["next"] = number + 1
                        self.busy += 1
                        return job, job["todo"].pop(0), number
                if self.closed:
                    return None
                self.cond.wait()

    def _run(self):
        while True:
            task = self._next()
            if task is None:
                return
            job, i, number = task
            try:
                if job["event"] is not None:
                    job["event"].synchronize()
                self._order(job)
                wrote = self._do(job, i, number)
            except BaseException as exc:
                self._fail(exc)
                with self.cond:
                    self.busy -= 1
                    self.cond.notify_all()
                return
            with self.cond:
                self.busy -= 1
                job["left"] -= 1
                self.files += wrote
                while self.jobs and not self.jobs[0]["left"]:  # free the ring in order
                    self.spilled -= self.jobs.popleft()["spill"]
                    self.written += 1
                self.version += 1
                self.cond.notify_all()

    def _order(self, job):
        # Plan the passes strictly in order (a chunk continues what earlier passes
        # left held), each once, by the first writer to reach it.
        with self.cond:
            while self.planned < job["seq"] and self.error is None:
                self.cond.wait()
            if self.error is not None:
                raise RuntimeError("the dump turned off")
            if job["plan"] is None:
                job["plan"] = self._plan(job)
                self.planned = job["seq"] + 1
                self.version += 1
                self.cond.notify_all()

    def _plan(self, job):
        # Under the lock: what to do with each request of this pass. "whole": a
        # sample of its own (as without chunking). "add": a chunk of a request held
        # between passes, written at its place in the request's file (_do_direct), or
        # appended to its part files where the prompt's length is unknown; the last
        # chunk (prefix + len == orig_seq_lens) publishes the stitched .ckpt. A held
        # request that a pass does not continue where it was due ends (an "end" op,
        # queued with the pass) as .ckpt.partial: aborted. Each op on a held request
        # has a number: writers run a part-file request's ops in that order, and a
        # direct request's side by side, publishing once all have run.
        t, meta = job["tensors"], job["meta"]
        lens, prefix, rids, how = meta["lens"], meta["prefix"], meta["rids"], meta.get("stitch")
        full = t["full"].tolist() if t.get("full") is not None else meta.get("full")
        full = full if full is not None and len(full) >= len(lens) else None
        slots, last, prev = (t[k].tolist() if t.get(k) is not None else None for k in ("slots", "last_loc", "prev_loc"))
        # Without orig_seq_lens (before 0.5.1) only a pass that fills the chunk budget
        # can have cut its last request; whether it did shows a pass later.
        maybe = None
        if full is None and meta["chunk"] > 0 and sum(lens) >= meta["chunk"] and any(lens):
            maybe = max(i for i, n in enumerate(lens) if n)
        plan, touched, ends = dict(), [], []

        def key(i):  # what the request's next chunk shows of it
            if how == "rid":  # with its slot where the batch has one: a rid is the client's to give
                return (rids[i], slots[i]) if slots is not None else rids[i]
            return last[i] if how == "kv" else slots[i]

        for i, n in enumerate(lens):
            if not n:
                continue
            p = prefix[i] if prefix is not None else 0
            goes_on = p + n < int(full[i]) if full is not None else i == maybe
            entry = None
            if how is not None and p > 0:
                probe = prev[i] if how == "kv" else key(i)
                entry = self.held.get(probe)
                fits = entry is not None and (entry["total"] is None or full is not None and int(full[i]) == entry["total"])
                if fits and entry["rows"] == p and not any(e is entry for e in touched):
                    del self.held[probe]
                else:
                    entry = None
            if entry is not None:
                entry.update(rows=p + n, missed=0, peers=0, pending=full is None)
                plan[i] = ("add", entry, entry["ops"], not goes_on)
                entry["ops"] += 1
            elif how is not None and p == 0 and goes_on:
                entry = dict(rid=rids[i] if rids is not None else None, rows=n, ops=1, done=0, missed=0, busy=0)
                entry.update(pending=full is None, layers=meta["layers"], parts=None, number=None, written=0, shapes=dict())
                # the prompt's length (orig_seq_lens): its rows go straight to their place
                # in the sample's file, chunk by chunk in any order (see _do_direct)
                entry["total"] = int(full[i]) if full is not None else None
                entry["provenance"] = meta.get("provenance")
                plan[i] = ("add", entry, 0, False)
            else:
                plan[i] = ("whole",)
                continue
            touched.append(entry)
            if goes_on:
                stale = self.held.pop(key(i), None)
                if stale is not None:  # its identity is taken by a new request: it ended
                    ends.append(("end", stale, stale["ops"], ".ckpt.partial"))
                    stale["ops"] += 1
                self.held[key(i)] = entry
        # Not continued: the next prefill pass carries a chunked request first (one per
        # scheduler), so it was aborted (0.5.14+ stop it between chunks), or, without
        # orig_seq_lens, it was whole (an exact fit of the budget). With rids the
        # request is known wherever it comes: it ends at the third pass without it, one
        # pass later for each other chunked request held at once since its last chunk
        # (requests may take turns).
        for k, entry in list(self.held.items()):
            entry["peers"] = max(entry.get("peers", 0), len(self.held) - 1)
            if any(e is entry for e in touched):
                continue
            entry["missed"] += 1
            if entry["pending"] or entry["missed"] >= (3 + entry["peers"] if how == "rid" else 1):
                del self.held[k]
                ends.append(("end", entry, entry["ops"], ".ckpt" if entry["pending"] else ".ckpt.partial"))
                entry["ops"] += 1
        if meta.get("end"):  # the cap: no pass comes after this one
            ends += self._end_held(lambda entry: True)
        job["todo"].extend(ends)
        job["left"] += len(ends)
        return plan

    def _end_held(self, which):
        # Under the lock: end the held requests `which` selects, as .ckpt.partial.
        ends = []
        for k, entry in list(self.held.items()):
            if which(entry):
                del self.held[k]
                ends.append(("end", entry, entry["ops"], ".ckpt.partial"))
                entry["ops"] += 1
        return ends

    def _do(self, job, i, number):
        # Run request i's op of a planned pass (or an "end" op); the number of files written.
        op = i if isinstance(i, tuple) else job["plan"][i]
        if op[0] == "whole":
            if _pysplice_hs_probe_row(job, i):
                return 0
            sample, suffix = _pysplice_hs_sample(job, i)
            _pysplice_hs_write(self.state, sample, suffix, number)
            return 1
        entry, seq = op[1], op[2]
        if entry["total"] is not None:
            return self._do_direct(job, i, op, number)
        with self.cond:  # this request's earlier ops first
            while entry["done"] != seq and self.error is None:
                self.cond.wait()
            if self.error is not None:
                raise RuntimeError("the dump turned off")
            entry["busy"] += 1
        try:
            if op[0] == "add":
                if entry["parts"] is None:
                    with self.cond:
                        self.live[id(entry)] = entry
                _pysplice_hs_parts_add(self.state, entry, job, i, number)
            suffix = (".ckpt" if op[3] else None) if op[0] == "add" else op[3]
            if suffix is None:
                return 0
            sample = _pysplice_hs_parts_sample(entry)
            _pysplice_hs_write(self.state, sample, suffix, entry["number"])
            del sample
            with self.cond:
                self._drop(entry)
            return 1
        except BaseException:
            entry["dead"] = True  # the writer fails: this request's part files go
            raise
        finally:
            with self.cond:
                entry["done"] += 1
                entry["busy"] -= 1
                if entry.get("dead"):
                    self._drop(entry)
                self.cond.notify_all()

    def _do_direct(self, job, i, op, number):
        # An op on a chunked request of known length: any writer takes any of its chunks
        # and writes the rows at their place in the request's one preallocated file
        # (.<stem>_s<serial>.stitch.tmp, laid out as torch.save lays out the sample), the
        # first chunk's writer having created it (that chunk is handed out first). The
        # op that completes the request's last outstanding op after its final one was
        # planned (the last chunk: .ckpt; an end: .ckpt.partial) publishes the sample.
        entry, seq = op[1], op[2]
        with self.cond:
            while seq and entry.get("stitch") is None and self.error is None and not entry.get("dead"):
                self.cond.wait()
            if self.error is not None or entry.get("dead"):
                raise RuntimeError("the dump turned off")
            entry["busy"] += 1
        try:
            if op[0] == "add":
                if not seq:
                    if number is None:
                        with self.state["lock"]:
                            number = self.state["next"]
                            self.state["next"] = number + 1
                    entry["number"] = number
                    stitch = _pysplice_hs_stitch_open(self.state, entry, job, i)
                    with self.cond:
                        entry["stitch"] = stitch
                        self.live[id(entry)] = entry
                        self.cond.notify_all()
                _pysplice_hs_stitch_add(entry, job, i)
            with self.cond:
                entry["done"] += 1
                if op[0] == "end" or op[3]:
                    entry["final"] = op[3] if op[0] == "end" else ".ckpt"
                finish = entry.get("final") is not None and entry["done"] == entry["ops"]
            if not finish:
                return 0
            _pysplice_hs_stitch_publish(self.state, entry)
            with self.cond:
                self._drop(entry)
            return 1
        except BaseException:
            entry["dead"] = True  # the writer fails: this request's file goes
            raise
        finally:
            with self.cond:
                entry["busy"] -= 1
                if entry.get("dead") and not entry["busy"]:
                    self._drop(entry)
                self.cond.notify_all()

    def _drop(self, entry):
        # Under the lock: close and remove a request's part files.
        self.live.pop(id(entry), None)
        _pysplice_hs_parts_drop(self.state, entry)

    def _fail(self, exc):
        with self.cond:
            # the first failure is the cause (others may only say the dump is off)
            exc = self.state.get("failed") or exc
            if self.error is None:
                logging.getLogger(__name__).warning(
                    "hidden state dump to %s turned off: writing failed, %d queued passes "
                    "dropped, serving goes on: %r",
                    self.where,
                    self.queued - self.written,
                    exc,
                )
                self.error = exc
                self.state["failed"] = exc  # samples still being written are not published
                self.dropped = self.queued - self.written
                self.phase = "off"
                self.lost += len(self.held)
            # Requests not finished: their part files go now, or, where a writer is in
            # the middle of an op on one, when that op ends (never under its feet).
            for entry in list(self.live.values()):
                if entry.get("busy"):  # writers in the middle of its ops: the last one drops it
                    entry["dead"] = True
                else:
                    self._drop(entry)
            self.held.clear()
            self.jobs.clear()
            self.spilled = 0
            self.version += 1
            self.cond.notify_all()

    def _write_status(self):
        # The status file, replaced atomically: a reader sees the old or the new one.
        import json
        import time

        with self.cond:
            info = dict(self.me, token=self.state["token"], queued=self.queued, written=self.written)
            info.update(dropped=self.dropped, files=self.files, state=self.phase, time=round(time.time(), 3))
            info.update(held=len(self.held), lost=self.lost)
        if self.sink is not None:
            info.update(sink=self.sink.counts())
        data = (json.dumps(info, sort_keys=True) + "\n").encode()
        fd_dir = self.state["dir_fd"]
        with self.status_lock:
            tmp = self.status + ".tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd_dir)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.replace(tmp, self.status, src_dir_fd=fd_dir, dst_dir_fd=fd_dir)

    def _report(self):
        # The status thread: first the debris of earlier processes, then the status file
        # each time the counts change (changes that come while it writes are merged).
        try:
            _pysplice_hs_clean(self.state["dir_fd"], self.me)
        except Exception as exc:
            logging.getLogger(__name__).warning("hidden state dump: could not clear %s of earlier debris: %r", self.where, exc)
        finally:
            self.cleaned.set()
        seen = 0
        while True:
            with self.cond:
                while self.version == seen and not self.closed:
                    self.cond.wait()
                if self.closed:
                    return
                seen = self.version
            try:
                self._write_status()
                with self.cond:
                    self.reported = seen
                    self.cond.notify_all()
            except Exception as exc:
                # A status file is bookkeeping: its failure never stops samples being
                # written. One warning; tried again a second later (or at the next change).
                self._status_failed(exc)
                with self.cond:
                    if self.closed:
                        return
                    self.cond.wait(1.0)
                    seen = -1

    def _sink_changed(self):
        with self.cond:
            self.version += 1
            self.cond.notify_all()

    def _status_failed(self, exc):
        if not self.status_warned:
            self.status_warned = True
            logging.getLogger(__name__).warning(
                "hidden state dump: the status file %s in %s could not be written, samples are "
                "still written (retried; later failures are not logged): %r",
                self.status,
                self.where,
                exc,
            )

    def close(self):
        # At exit: let the writer finish what is queued (no sample lost on a normal
        # shutdown); then the status file goes, unless it has passes dropped to report.
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        for worker in self.workers:
            if worker.is_alive():
                worker.join()
        # Requests still held (a chunked prompt whose last chunk never came): written
        # as .ckpt.partial with the rows they have, never left as part files.
        with self.cond:
            ends = self._end_held(lambda entry: True) if self.error is None else []
        for op in ends:
            try:
                self._do(None, op, None)
            except BaseException as exc:
                self._fail(exc)
        if self.sink is not None:  # what it has queued goes to the store first, within a minute
            self.sink.close(60.0)
        with self.cond:
            self.version += 1
            self.cond.notify_all()
        if self.reporter.is_alive():
            self.reporter.join()
        with self.cond:
            if self.phase == "running":
                self.phase = "closed"
            clean = self.dropped == 0
        try:  # all written: nothing left to say; else the status file says what was dropped
            if clean:
                os.unlink(self.status, dir_fd=self.state["dir_fd"])
            else:
                self._write_status()
        except Exception:
            pass
        try:  # a temporary left by a status write that failed
            os.unlink(self.status + ".tmp", dir_fd=self.state["dir_fd"])
        except Exception:
            pass
