"""The store sink: each complete sample the writers publish moves from the dump folder into a
Mooncake store, under SpecForge's online names, and a ticket in the folder says it is there.

Its definitions are injected as they are written here (see __init__.py).
"""

import logging
import os

try:
    import torch
except ImportError:  # the dump runs under PyTorch; the parts that need none are tested without it
    torch = None

from .files import _pysplice_hs_publish


def _pysplice_hs_sink_setting(raw):
    # The sink setting (${sink_env}): None (the folder only) or (store id, keep the files).
    # mooncake://STORE_ID moves each complete sample into the store; ?keep=files keeps its
    # file in the folder as well. A bad value is refused (the dump stays off).
    import re

    if not raw:
        return None
    scheme, sep, rest = raw.partition("://")
    if scheme != "mooncake" or not sep:
        raise ValueError("is not mooncake://STORE_ID")
    store, _, query = rest.partition("?")
    if not re.fullmatch(r"[A-Za-z0-9._:-]+", store) or len(store) > 200:
        raise ValueError("names no store id (letters, digits and . _ : - only)")
    if query not in ("", "keep=files"):
        raise ValueError("takes ?keep=files only")
    return store, query == "keep=files"


class _pysplice_hs_Sink:
    # Runs beside the writers of one process (the writer rank of its attention group) and
    # never blocks them: a writer hands it the name of each complete sample it publishes
    # (offer, without waiting). One thread maps the next sample's file (torch.load with
    # mmap: no copy) and faults its pages in while another puts the sample before it into
    # the store from those pages (faulting them one by one as the put reads them costs
    # about a third of a put), hard-pinned, under
    # STORE/SAMPLE/g1/NAME, SAMPLE being the file's name without .ckpt. SpecForge's names:
    # hidden_state is the aux layers' rows, target the final rows; input_ids and
    # attention_mask are [1, L]. Once every object is in, a ticket (SAMPLE.store.json:
    # the keys, shapes, ids, rid and provenance) is published beside it, and a third
    # thread unmaps the sample and removes its file while the next one is put.
    # The sender publishes the ticket to the trainer; a sample without a ticket is never
    # announced, and a failed put removes what the sample had put.
    #
    # Overflow rule: a sample the sink cannot take (its queue of names is full, the store
    # is full, a put fails, the store cannot be reached) stays in the folder as the
    # ordinary sample it is: spilled, counted in the status file, with a warning the first
    # time for each reason. The forward never waits on the store.

    depth = 64  # names waiting: a name is a few bytes, the samples are in the folder

    def __init__(self, state, setting, changed):
        import queue
        import threading

        self.state, self.store_id, self.keep = state, setting[0], setting[1]
        self.changed = changed  # tells the writer its status file must say the new counts
        self.names = queue.Queue(maxsize=self.depth)
        self.stored = self.spilled = self.pending = 0
        self.warned = set()
        self.client, self.config, self.dead = None, None, None
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="pysplice-hs-sink", daemon=True)
        self.thread.start()

    def offer(self, name):
        # From a writer that just published `name`: queue it, or leave it spilled.
        import queue

        if not name.endswith(".ckpt"):
            return
        with self.lock:
            if self.dead is None:
                try:
                    self.names.put_nowait(name)
                    self.pending += 1
                    return
                except queue.Full:
                    pass
        self._spill(name, "queue full" if self.dead is None else self.dead)

    def counts(self):
        with self.lock:
            return dict(store=self.store_id, queued=self.pending, stored=self.stored, spilled=self.spilled)

    def close(self, wait):
        # At exit: the names queued are moved (up to `wait` seconds), then the thread ends.
        import queue

        try:
            self.names.put(None, timeout=wait)
        except queue.Full:  # the thread is stuck in the store: what it holds stays in the folder
            return
        self.thread.join(wait)

    def _spill(self, name, why):
        with self.lock:
            self.spilled += 1
            first = why not in self.warned
            self.warned.add(why)
        if first:
            logging.getLogger(__name__).warning(
                "hidden state dump: %s stays in the dump folder, not in store %s (%s; later samples "
                "spilled for this reason are counted in the status file, not logged)",
                name,
                self.store_id,
                why,
            )
        self.changed()

    def _connect(self):
        from mooncake.store import MooncakeDistributedStore, ReplicateConfig

        env = os.environ
        master = env.get("MOONCAKE_MASTER_SERVER_ADDR", "")
        metadata = env.get("MOONCAKE_METADATA_SERVER", "")
        if not master or not metadata:
            raise RuntimeError("MOONCAKE_MASTER_SERVER_ADDR and MOONCAKE_METADATA_SERVER must be set")
        segment = int(env.get("MOONCAKE_GLOBAL_SEGMENT_SIZE", "") or 4 << 30)
        buffer = int(env.get("MOONCAKE_LOCAL_BUFFER_SIZE", "") or 512 << 20)
        protocol = env.get("MOONCAKE_PROTOCOL", "") or "tcp"
        host = env.get("MOONCAKE_LOCAL_HOSTNAME", "") or __import__("socket").gethostname()
        # The client's setup holds the interpreter's lock while it retries an absent master
        # (20 tries, about 90 s: the forward would stop with it): both servers must answer
        # a plain connection first, which waits without holding it.
        import socket
        import urllib.parse

        where = urllib.parse.urlsplit(metadata)
        for name, address in (("master", master.rpartition(":")), ("metadata server", (where.hostname, ":", where.port))):
            try:
                socket.create_connection((address[0].strip("[]"), int(address[2])), timeout=5).close()
            except (OSError, ValueError, TypeError) as exc:
                raise RuntimeError("the %s at %s does not answer (%s)" % (name, master if name == "master" else metadata, exc)) from None
        client = MooncakeDistributedStore()
        rc = client.setup(host, metadata, segment, buffer, protocol, env.get("MOONCAKE_DEVICE", ""), master)
        if rc != 0:
            raise RuntimeError("setup answered %s (master %s)" % (rc, master))
        config = ReplicateConfig()
        config.replica_num = 1
        config.with_hard_pin = True
        self.client, self.config, self.register = client, config, protocol != "tcp"

    def _run(self):
        import queue
        import threading

        try:
            self._connect()
        except Exception as exc:
            with self.lock:
                self.dead = "the store cannot be reached: %s" % (exc,)
        loaded = queue.Queue(maxsize=1)  # one sample mapped ahead of the one being put
        done = queue.Queue(maxsize=2)  # samples put, their mappings and files not yet gone
        threading.Thread(target=self._load_ahead, args=(loaded,), name="pysplice-hs-sink-load", daemon=True).start()
        freeing = threading.Thread(target=self._free_behind, args=(done,), name="pysplice-hs-sink-free", daemon=True)
        freeing.start()
        while True:
            item = loaded.get()
            if item is None:
                done.put(None)
                freeing.join()
                return
            name, sample, why = item
            gone = None
            try:
                if why is not None:
                    self._spill(name, why)
                elif self._move(name, sample) and not self.keep:
                    gone = name
            except Exception as exc:
                self._spill(name, "%s: %s" % (type(exc).__name__, exc))
            finally:
                done.put((sample, gone))
                del sample, item

    def _free_behind(self, done):
        # Unmapping a sample (its page tables) costs about a sixth of its put and unlinking its
        # file (its pages) about half: both done here, beside the next put. The sample leaves
        # the queued count only once its file is gone, so that a folder with nothing queued
        # holds no file the store already has.
        while True:
            item = done.get()
            if item is None:
                return
            sample, gone = item
            # Unmapping holds the interpreter's lock (the puts would wait): the pages leave
            # the mapping first without it (MADV_DONTNEED; they stay in the file).
            if sample is not None:
                _pysplice_hs_sink_advise(sample, 4)
            del item, sample
            if gone is not None:
                try:
                    os.unlink(gone, dir_fd=self.state["dir_fd"])
                except OSError:
                    pass
            with self.lock:
                self.pending -= 1
            self.changed()

    def _load_ahead(self, loaded):
        while True:
            name = self.names.get()
            if name is None:
                loaded.put(None)
                return
            if self.dead is not None:
                loaded.put((name, None, self.dead))
                continue
            try:
                sample = self._load(name)
            except Exception as exc:
                loaded.put((name, None, "%s: %s" % (type(exc).__name__, exc)))
                continue
            loaded.put((name, sample, None))
            # The aux rows, put first, are in; the rest is faulted in while they are put.
            _pysplice_hs_sink_advise(dict((k, t) for k, t in sample.items() if k != "aux_hidden_state"), 22)
            del sample

    def _load(self, name):
        # The sample, its tensors on the file's pages, the aux rows' faulted in
        # (MADV_POPULATE_READ, Linux 5.14+; where it is refused the put faults them itself).
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.state["dir_fd"])
        try:
            sample = torch.load("/proc/self/fd/%d" % fd, mmap=True, weights_only=True, map_location="cpu")
        finally:
            os.close(fd)
        _pysplice_hs_sink_advise(dict(aux=sample.get("aux_hidden_state")), 22)
        return sample

    def _move(self, name, sample):
        # Put one sample's objects and publish its ticket: whether it is in the store.
        import json

        aux = sample.get("aux_hidden_state")
        if aux is None:
            raise ValueError("no aux_hidden_state (the aux layers are not captured)")
        ids = sample["input_ids"].reshape(1, -1)
        count = ids.shape[1]
        objects = [
            ("hidden_state", aux),
            ("target", sample["hidden_state"]),
            ("input_ids", ids),
            ("attention_mask", torch.ones((1, count), dtype=torch.long)),
        ]
        stem = name[: -len(".ckpt")]
        keys = dict()
        put = []
        try:
            for key, t in objects:
                t = t.contiguous()
                where = "%s/%s/g1/%s" % (self.store_id, stem, key)
                size = t.numel() * t.element_size()
                if self.register:
                    self.client.register_buffer(t.data_ptr(), size)
                try:
                    rc = self.client.put_from(where, t.data_ptr(), size, self.config)
                finally:
                    if self.register:
                        self.client.unregister_buffer(t.data_ptr())
                if rc != 0:
                    full = rc == -200
                    raise _pysplice_hs_SinkRefused("the store is full" if full else "a put answered %d" % rc)
                put.append(where)
                keys[key] = dict(key=where, shape=list(t.shape), dtype=str(t.dtype).replace("torch.", ""), bytes=size)
            ticket = dict(
                format="pysplice-hs-store",
                version=1,
                store_id=self.store_id,
                sample_id=stem,
                generation=1,
                objects=keys,
                num_tokens=count,
                rid=sample.get("rid"),
                layers_to_capture=sample.get("layers_to_capture"),
                provenance=sample.get("provenance"),
                input_ids=ids[0].tolist(),
            )
            self._ticket(stem + ".store.json", (json.dumps(ticket, sort_keys=True) + "\n").encode())
        except _pysplice_hs_SinkRefused as exc:
            self._unput(put)
            self._spill(name, str(exc))
            return False
        except BaseException:
            self._unput(put)
            raise
        del aux, ids, objects
        with self.lock:
            self.stored += 1
        self.changed()
        return True

    def _unput(self, keys):
        for where in keys:
            try:
                self.client.remove(where, True)
            except Exception:
                pass

    def _ticket(self, name, data):
        # An exclusive hidden temporary, synced, then given its name (never over a file).
        fd_dir = self.state["dir_fd"]
        tmp = "." + name + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd_dir)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            if not _pysplice_hs_publish(self.state, tmp, name):
                raise FileExistsError("%s exists" % name)
        finally:
            try:
                os.unlink(tmp, dir_fd=fd_dir)
            except OSError:
                pass


def _pysplice_hs_sink_advise(sample, advice):
    # madvise(2) on the pages of a loaded sample's tensors, through ctypes (which lets go of
    # the interpreter's lock); a refusal changes nothing that matters, so it is not checked.
    # A tensor's bytes are the span its strides reach, within its storage. Faulting in (22,
    # MADV_POPULATE_READ) takes every page that span touches; dropping (4, MADV_DONTNEED)
    # only the pages wholly inside it, so that no page another object shares is ever
    # dropped, whatever memory the tensor turned out to be on.
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    page = mmap.PAGESIZE
    for t in sample.values():
        if isinstance(t, torch.Tensor) and t.numel() and min(t.stride(), default=0) >= 0:
            reach = 1 + sum((n - 1) * step for n, step in zip(t.shape, t.stride()))
            storage = t.untyped_storage()
            first = max(t.data_ptr(), storage.data_ptr())
            end = min(t.data_ptr() + reach * t.element_size(), storage.data_ptr() + storage.nbytes())
            if advice == 4:
                first, end = -(-first // page) * page, end // page * page
            else:
                first, end = first // page * page, -(-end // page) * page
            if end > first:
                libc.madvise(ctypes.c_void_p(first), ctypes.c_size_t(end - first), advice)


class _pysplice_hs_SinkRefused(Exception):
    # The store refused a sample (full, or a put failed): it is spilled, the sink goes on.
    pass
