"""The publisher: samples the dump's store sink put into a Mooncake store, announced to
SpecForge's online trainer through its file channel.

The server's sink leaves a ticket (SAMPLE.store.json) in the dump folder once a sample's
hidden_state, target, input_ids and attention_mask are in the store. The sender, which knows
each sample's conversation, matches the ticket as it matches a sample file (by rid, else by its
ids), puts the loss_mask, checks the provenance against what the trainer expects, and appends
the sample's SampleRef line to CONTROL/refs.jsonl: the one line SpecForge's consumer reads, in
the layout of `dataclasses.asdict(SampleRef)`, written whole with O_APPEND and synced. The
channel's sidecars are honoured: back-pressure (published - .consumed_count under a high
watermark of at least .consumer_quantum), .consumer_done / .consumer_failed end the run, and
.closed / .failed are the publisher's verdict. A sample whose ref line is written is published;
a restart reads the channel and never publishes a sample, or a rid, twice.

Nothing here imports SpecForge: its line format is written down, and its tests read it back
with SpecForge's own parser.
"""

import dataclasses
import json
import os
import re
import time

from . import masks as slm

TICKET_SUFFIX = ".store.json"
MAX_TICKET = 64 << 20  # bytes: a ticket holds a sample's ids (about 8 per token as JSON)
STORE_FULL = -200
MAX_REF_LINE = 1 << 20  # bytes of one SampleRef line read back (this publisher writes about 2 KiB)
# The dtypes SpecForge's consumer reads, by their size in bytes.
ITEMSIZE = dict(float32=4, float64=8, float16=2, bfloat16=2, int64=8, int32=4, int16=2, int8=1, uint8=1, bool=1)
READABLE_DTYPES = tuple(ITEMSIZE)


class Refused(Exception):
    """The run cannot go on: one line that says why (the channel's .failed holds it too)."""


class Stop(Exception):
    """The trainer ended (.consumer_done) or failed (.consumer_failed): publish nothing more."""


def is_ticket_name(name):
    return name.endswith(TICKET_SUFFIX) and not name.startswith(".")


def read_ticket(path):
    """The ticket at `path`, checked: a dict with the fields the publisher uses (MaskError
    when it is not one: a link, too large, not JSON, a field missing or of the wrong kind)."""
    with os.fdopen(slm.open_regular(path), "rb") as f:
        raw = f.read(MAX_TICKET + 1)
    if len(raw) > MAX_TICKET:
        raise slm.MaskError("a ticket over %d MiB" % (MAX_TICKET >> 20))
    try:
        t = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise slm.MaskError("not a ticket: %s" % exc) from None
    if not isinstance(t, dict) or t.get("format") != "pysplice-hs-store" or t.get("version") != 1:
        raise slm.MaskError("not a pysplice store ticket (format, version)")
    ids = t.get("input_ids")
    n = t.get("num_tokens")
    if not isinstance(ids, list) or not all(type(i) is int for i in ids) or n != len(ids) or not ids:
        raise slm.MaskError("input_ids and num_tokens do not agree")
    objects = t.get("objects")
    if not isinstance(objects, dict) or set(objects) != {"hidden_state", "target", "input_ids", "attention_mask"}:
        raise slm.MaskError("objects must name hidden_state, target, input_ids and attention_mask")
    for name, o in objects.items():
        shape = o.get("shape") if isinstance(o, dict) else None
        if (not isinstance(o.get("key"), str) or not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape)
                or o.get("dtype") not in READABLE_DTYPES or len(shape) < 2 or shape[:2] != [1, n]):
            raise slm.MaskError("object %s: key, shape [1, %d, ...] and dtype expected" % (name, n))
    for key in ("store_id", "sample_id"):
        if not isinstance(t.get(key), str) or not re.fullmatch(r"[A-Za-z0-9._:-]{1,200}", t[key]):
            raise slm.MaskError("%s missing, or not letters, digits and . _ : -" % key)
    for name, o in objects.items():  # where SpecForge's consumer will look for it, and nowhere else
        if o["key"] != "%s/%s/g1/%s" % (t["store_id"], t["sample_id"], name):
            raise slm.MaskError("object %s: its key is not %s/%s/g1/%s" % (name, t["store_id"], t["sample_id"], name))
    if t.get("generation") != 1:
        raise slm.MaskError("generation must be 1")
    if t.get("rid") is not None and not isinstance(t["rid"], str):
        raise slm.MaskError("rid must be a string")
    if not isinstance(t.get("provenance"), dict):
        raise slm.MaskError("provenance missing")
    return t


def default_aux_ids(layers):
    """SpecForge's default EAGLE-3 aux layer ids for a target of `layers` layers."""
    return [1, layers // 2 - 1, layers - 4]


def expected_from_draft(path):
    """(aux ids or None, hidden width or None) from a SpecForge draft config (JSON)."""
    try:
        with open(path, "rb") as f:
            cfg = json.loads(f.read(MAX_TICKET).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise Refused("--draft-config %s: %s" % (slm.shown(path, 200), slm.one_line(exc, 200))) from None
    if not isinstance(cfg, dict):
        raise Refused("%s: not a JSON object" % path)
    eagle = cfg.get("eagle_config") if isinstance(cfg.get("eagle_config"), dict) else {}
    ids = eagle.get("eagle_aux_hidden_state_layer_ids", cfg.get("eagle_aux_hidden_state_layer_ids"))
    width = cfg.get("target_hidden_size", cfg.get("hidden_size"))
    if ids is not None and not (isinstance(ids, list) and all(type(i) is int for i in ids)):
        raise Refused("%s: eagle_aux_hidden_state_layer_ids is not a list of integers" % path)
    if width is not None and type(width) is not int:
        raise Refused("%s: target_hidden_size is not an integer" % path)
    return ids, width


@dataclasses.dataclass
class Expect:
    """What the trainer expects of every sample; None: SpecForge's default, or the first sample's."""

    aux_ids: list = None
    hidden: int = None
    dtype: str = None
    release: str = None


def provenance_problem(ticket, expect):
    """One line saying how a ticket's sample does not fit the trainer, or None. The first
    sample settles what was left open (dtype, release, width)."""
    p = ticket["provenance"]
    ids = p.get("eagle_aux_hidden_state_layer_ids")
    layers = p.get("num_hidden_layers")
    want = expect.aux_ids if expect.aux_ids is not None else default_aux_ids(layers) if isinstance(layers, int) else None
    if want is None or ids != want:
        return "aux layer ids %s, the trainer expects %s (%s)" % (
            ids, want, "the draft config's" if expect.aux_ids is not None else "SpecForge's default for %s layers" % layers)
    hidden = ticket["objects"]["target"]["shape"][-1]
    aux = ticket["objects"]["hidden_state"]["shape"][-1]
    if p.get("hidden_size") != hidden or aux != hidden * len(ids):
        return "hidden width %s with aux rows of %s, not %d x %s" % (hidden, aux, len(ids), hidden)
    for field, value in (("hidden", hidden), ("dtype", ticket["objects"]["target"]["dtype"]), ("release", p.get("sglang_version"))):
        if getattr(expect, field) is None:
            setattr(expect, field, value)
        elif getattr(expect, field) != value:
            what = dict(hidden="hidden width", dtype="dtype", release="SGLang release")[field]
            return "%s %s, the run's samples so far have %s" % (what, value, getattr(expect, field))
    return None


def size_of(o):
    """The bytes of an object of a ticket: its shape times its dtype's size."""
    count = 1
    for d in o["shape"]:
        count *= d
    return count * ITEMSIZE[o["dtype"]]


def ref_line(ticket, run_id, mask_key, versions, rid, digest):
    """The SampleRef line of a ticket's sample (SpecForge's field order, compact JSON)."""
    n = ticket["num_tokens"]
    sid = ticket["sample_id"]
    objects = dict(ticket["objects"])
    objects["loss_mask"] = dict(key=mask_key, shape=[1, n], dtype="int64")
    order = ("input_ids", "loss_mask", "hidden_state", "target", "attention_mask")
    specs = dict()
    for name in order:
        specs[name] = dict(name=name, shape=objects[name]["shape"], dtype=objects[name]["dtype"], device_hint=None,
                           required=True, target_repr="hidden_state" if name == "target" else None, target_meta=dict())
    p = ticket["provenance"]
    ref = dict(
        sample_id=sid,
        run_id=run_id,
        source_task_id=rid,
        feature_store_uri="mooncake://%s/%s" % (ticket["store_id"], sid),
        feature_keys=dict((name, "%s/%s" % (sid, name)) for name in order),
        feature_specs=specs,
        strategy="eagle3",
        schema_version=1,
        target_model_version=versions["target"],
        draft_weight_version=None,
        tokenizer_version=versions["tokenizer"],
        num_tokens=n,
        estimated_bytes=sum(size_of(o) for o in objects.values()),
        metadata=dict(
            run_id=run_id, source_task_id=rid, strategy="eagle3", target_repr="hidden_state", vocab_map_version=None,
            generation=1, producer="pysplice sglang-hs-send", rid=rid, ids_sha256=digest,
            aux_layer_ids=p.get("eagle_aux_hidden_state_layer_ids"), sglang_version=p.get("sglang_version"),
            architecture=p.get("architecture"), config_sha256=p.get("config_sha256"),
        ),
    )
    return json.dumps(ref, separators=(",", ":"), ensure_ascii=True)


class Channel:
    """SpecForge's file channel: CONTROL/refs.jsonl and the files beside it."""

    def __init__(self, control_dir):
        os.makedirs(control_dir, mode=0o700, exist_ok=True)
        self.path = os.path.join(control_dir, "refs.jsonl")
        self.run_id = None  # of the lines already there

    def side(self, suffix):
        return self.path + suffix

    def read_side(self, suffix, limit=1 << 16):
        try:
            with open(self.side(suffix), "rb") as f:
                return f.read(limit).decode("utf-8", "replace")
        except FileNotFoundError:
            return None

    def number(self, suffix):
        raw = self.read_side(suffix)
        try:
            return int(raw.strip()) if raw and raw.strip() else None
        except ValueError:
            return None

    def ended(self):
        """None while the trainer runs; else what ended it."""
        failed = self.read_side(".consumer_failed")
        if failed is not None:
            return "the trainer failed: %s" % (slm.one_line(failed.strip(), 300) or "(no reason given)")
        if os.path.exists(self.side(".consumer_done")):
            return "the trainer is done"
        return None

    def published(self):
        """{sample_id: rid} of the lines already in the channel (a restart's starting point)."""
        out = dict()
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            return out
        with f:  # a line at a time: a long run's channel holds many (what is kept is two ids a line)
            k = 0
            while True:
                line = f.readline(MAX_REF_LINE + 1)
                if not line:
                    return out
                k += 1
                if not line.endswith(b"\n"):
                    raise Refused("%s:%d is cut or over %d bytes: the trainer cannot read it either; start a new channel" % (
                        self.path, k, MAX_REF_LINE))
                try:
                    ref = json.loads(line)
                    out[ref["sample_id"]] = ref.get("metadata", dict()).get("rid")
                    self.run_id = ref["run_id"]
                except (ValueError, KeyError, TypeError, AttributeError):
                    raise Refused("%s:%d is not a SampleRef line" % (self.path, k)) from None

    def append(self, line):
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            data = (line + "\n").encode()
            if os.write(fd, data) != len(data):
                raise OSError("a short write to %s" % self.path)
            os.fsync(fd)
        finally:
            os.close(fd)

    def verdict(self, suffix, text=""):
        with open(self.side(suffix), "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())


class Store:
    """A Mooncake store client set up from the MOONCAKE_* variables SpecForge reads."""

    def __init__(self):
        # The client logs through glog to stderr (an info line per connection, an error line for
        # each metadata lookup that finds nothing yet): only its fatal lines, unless asked.
        os.environ.setdefault("GLOG_minloglevel", "3")
        try:
            from mooncake.store import MooncakeDistributedStore, ReplicateConfig
        except ImportError as exc:
            raise Refused("cannot import mooncake.store (pip install mooncake-transfer-engine-non-cuda): %s" % exc) from None
        env = os.environ
        master, metadata = env.get("MOONCAKE_MASTER_SERVER_ADDR"), env.get("MOONCAKE_METADATA_SERVER")
        if not master or not metadata:
            raise Refused("set MOONCAKE_MASTER_SERVER_ADDR and MOONCAKE_METADATA_SERVER (the store the server's sink uses)")
        try:
            segment = int(env.get("MOONCAKE_GLOBAL_SEGMENT_SIZE") or 64 << 20)
            buffer = int(env.get("MOONCAKE_LOCAL_BUFFER_SIZE") or 64 << 20)
        except ValueError:
            raise Refused("MOONCAKE_GLOBAL_SEGMENT_SIZE and MOONCAKE_LOCAL_BUFFER_SIZE are numbers of bytes") from None
        host = env.get("MOONCAKE_LOCAL_HOSTNAME") or __import__("socket").gethostname()
        self.client = MooncakeDistributedStore()
        rc = self.client.setup(host, metadata, segment, buffer, env.get("MOONCAKE_PROTOCOL") or "tcp",
                               env.get("MOONCAKE_DEVICE", ""), master)
        if rc != 0:
            raise Refused("the Mooncake store at %s answered %s to setup" % (master, rc))
        self.config = ReplicateConfig()
        self.config.replica_num = 1
        self.config.with_hard_pin = True

    def put(self, key, data):
        return self.client.put(key, data, self.config)

    def exists(self, key):
        return self.client.is_exist(key) == 1

    def size(self, key):
        """The object's size in bytes, or a negative status (-704: no such object)."""
        return self.client.get_size(key)

    def remove(self, key):
        try:
            return self.client.remove(key, True)
        except TypeError:  # a client without force
            return self.client.remove(key)

    def close(self):
        try:
            self.client.close()
        except Exception:
            pass


class Publisher:
    """Announces tickets' samples to one trainer through one channel."""

    def __init__(self, control_dir, expect, versions, high_watermark=0, report=print, store=None):
        self.channel = Channel(control_dir)
        # the run id is the store id the server's sink puts under (the trainer's store id)
        self.run_id, self.expect, self.versions, self.report = None, expect, versions, report
        self.high = high_watermark
        ended = self.channel.ended()
        for suffix in (".closed", ".failed"):
            if os.path.exists(self.channel.side(suffix)):
                raise Refused("%s exists: this channel is closed; a new trainer run needs a new control folder" % self.channel.side(suffix))
        if ended is not None:
            raise Refused("%s: %s; a new trainer run needs a new control folder" % (self.channel.path, ended))
        self.done = self.channel.published()  # sample_id -> rid
        self.run_id = self.channel.run_id
        self.rids = set(r for r in self.done.values() if r is not None)
        self.rids_before = set(self.rids)
        self.count = len(self.done)
        self.store = store if store is not None else Store()
        self.quantum = None

    def wait_turn(self, stop):
        """Block until the trainer takes one more sample (Stop when it ended, or `stop` is set)."""
        said = time.monotonic()
        while True:
            ended = self.channel.ended()
            if ended is not None:
                raise Stop(ended)
            if self.quantum is None:
                self.quantum = self.channel.number(".consumer_quantum")
            if self.quantum is not None:
                high = max(self.high, self.quantum)
                consumed = self.channel.number(".consumed_count") or 0
                if self.count - consumed < high:
                    return
            if stop.is_set():
                raise Stop("interrupted")
            if time.monotonic() - said > 30:
                said = time.monotonic()
                self.report("waiting for the trainer (%s): %d published, %s consumed" % (
                    "no .consumer_quantum yet" if self.quantum is None else "high watermark %d" % max(self.high, self.quantum),
                    self.count, self.channel.number(".consumed_count") or 0))
            stop.wait(0.1)

    def publish(self, ticket, mask, rid, digest, stop):
        """Announce one ticket's sample with its loss mask; False if it was already published."""
        sid = ticket["sample_id"]
        if sid in self.done or (rid is not None and rid in self.rids):
            return False
        if self.run_id is None:
            self.run_id = ticket["store_id"]
        elif ticket["store_id"] != self.run_id:
            raise Refused("%s is in store %s, the run's samples so far in %s: one trainer, one store id" % (sid, ticket["store_id"], self.run_id))
        why = provenance_problem(ticket, self.expect)
        if why is not None:
            raise Refused("%s: %s: refused before the trainer reads it" % (sid, why))
        for name, o in ticket["objects"].items():
            if not self.store.exists(o["key"]):
                raise slm.MaskError("the store lost its %s (a server restart without a segment host?)" % name)
        self.wait_turn(stop)
        key = "%s/%s/g1/loss_mask" % (ticket["store_id"], sid)
        data = b"".join(int(v).to_bytes(8, "little", signed=True) for v in mask)
        self.put_mask(key, data, sid, stop)
        self.channel.append(ref_line(ticket, self.run_id, key, self.versions, rid, digest))
        self.done[sid] = rid
        if rid is not None:
            self.rids.add(rid)
        self.count += 1
        return True

    def put_mask(self, key, data, sid, stop, patience=60.0):
        """Put a loss mask and make sure it is there, whole. A put to a key that holds an object
        answers 0 and keeps that object: a sender killed in the middle of this put may have
        left one that never completes (the master drops it later), so the size is read back,
        and a stale object removed and the put tried again, for `patience` seconds at most."""
        delay, began = 0.1, time.monotonic()
        while True:
            rc = self.store.put(key, data)
            if rc == 0 and self.store.size(key) == len(data):
                return
            self.store.remove(key)
            if rc != 0 and rc != STORE_FULL:
                raise Refused("the store refused the loss mask of %s (status %d)" % (sid, rc))
            if rc == 0 and time.monotonic() - began > patience:
                raise slm.MaskError("the store keeps no whole loss mask for it (an unfinished put of a sender that died?)")
            # full (or a stale object): wait for the trainer to free some, or the master to drop it
            if self.channel.ended() is not None or stop.is_set():
                raise Stop(self.channel.ended() or "interrupted")
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def finish(self, failure, stop, wait_s=None):
        """Write the verdict (.closed, or .failed with `failure`), then keep the store client (and
        the objects in its segment) until the trainer ends; what it never took is removed."""
        self.channel.verdict(".failed", failure) if failure else self.channel.verdict(".closed")
        began = time.monotonic()
        while self.channel.ended() is None and not stop.is_set():
            if wait_s is not None and time.monotonic() - began > wait_s:
                break
            stop.wait(0.2)
        ended = self.channel.ended()
        left = 0
        if ended is not None and self.run_id is not None:
            # The trainer removes what it trained on; what it never took goes now.
            for sid in self.done:
                for name in ("hidden_state", "target", "input_ids", "attention_mask", "loss_mask"):
                    key = "%s/%s/g1/%s" % (self.run_id, sid, name)
                    if self.store.exists(key):
                        left += name == "loss_mask"
                        self.store.remove(key)
        return ended, left
