"""sglang-hs-send: send training conversations to a patched SGLang server, once each.

Reads conversations (JSONL, one {"messages": [...]} per line in the OpenAI shape, or
ShareGPT's {"conversations": [{"from", "value"}]}; "rid" or "id" names a conversation, else
a hash of its messages does), renders each with the model's tokenizer and chat template
exactly as scripts/specforge_loss_mask.py does, and POSTs the token ids to SGLang's native
/generate with an explicit rid and one new token. The server's dump (sglang-hs-dump) writes
one sample per request; when a sample lands in a --dump-dir folder, its loss_mask is set
(SpecForge's rule: assistant tokens only) and checked against what was sent.

With --request-dumps DIR... instead of conversations, the samples are what production SGLang
servers served: their request dumps, read without running them by request_dumps.py (beside this
file), each finished request the prompt's token ids then its output ids, the mask on the latter.

What was sent is kept in a record (JSONL, append-only, one line per event): a rerun of the
same command skips every conversation whose complete sample is on disk (or, without a dump
folder, that the server answered) and sends what is missing or partial again. The record
also holds each conversation's mask, so that `--masks-only` sets the masks of a folder
merged from several nodes without the tokenizer or the conversations.

This file runs inside the `sglang-hs-send` command (which embeds it, with the loss-mask
module, and starts the chosen Python with it); it needs `transformers` for the tokenizer,
and no PyTorch: samples are read and patched as the zip archives torch.save writes.
"""

import argparse
import hashlib
import http.client
import json
import os
import queue
import signal
import struct
import sys
import threading
import time
import urllib.parse

try:
    import specforge_loss_mask as slm
except ImportError:  # run from a checkout: the module is scripts/specforge_loss_mask.py
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "..", "scripts"))
    import specforge_loss_mask as slm
try:
    import request_dumps
except ImportError:  # run from a checkout: the module is beside this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import request_dumps

PROG = "sglang-hs-send"
RECORD_NAME = ".hs_send_record.jsonl"
# Transient answers: the server (or the router in front of it) is busy, restarting or gone
# for a moment. Anything else in 4xx is the request's own fault and is not retried.
RETRY_STATUS = (408, 429, 500, 502, 503, 504)


class Skip(Exception):
    """A conversation that is named and skipped, never sent."""


# ---------------------------------------------------------------------------------------
# Conversations


def count_lines(path):
    with open(path, "rb") as f:
        return sum(1 for line in f if line.strip())


def conversations(path):
    """(line number, rid, messages, tools) for each line; Skip for a line that is not one."""
    roles = dict(human="user", user="user", gpt="assistant", assistant="assistant", system="system", tool="tool")
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                item = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as exc:
                yield number, None, Skip("not a JSON line: %s" % exc), None
                continue
            if not isinstance(item, dict):
                yield number, None, Skip("not a JSON object"), None
                continue
            messages = item.get("messages")
            if messages is None and isinstance(item.get("conversations"), list):
                messages = [
                    dict(role=roles.get(m.get("from"), m.get("from")), content=m.get("value"))
                    for m in item["conversations"]
                    if isinstance(m, dict)
                ]
            if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
                yield number, None, Skip('no "messages" list of objects'), None
                continue
            rid = item.get("rid", item.get("id"))
            if rid is None:
                canon = json.dumps([messages, item.get("tools")], sort_keys=True, ensure_ascii=False)
                rid = "hs-" + hashlib.sha256(canon.encode("utf-8")).hexdigest()[:20]
            elif not isinstance(rid, (str, int)) or isinstance(rid, bool) or str(rid) == "":
                yield number, None, Skip('"rid" must be a non-empty string'), None
                continue
            yield number, str(rid), messages, item.get("tools")


def render(tokenizer, messages, tools):
    """(ids, mask): the tokens to send and SpecForge's mask over them."""
    try:
        text, spans = slm.assistant_spans(tokenizer, messages, tools)
    except slm.MaskError as exc:
        raise Skip(str(exc)) from None
    except Exception as exc:  # the template's own refusal (jinja's raise_exception, a bad role)
        raise Skip("the chat template rejects it: %s" % (str(exc).strip() or type(exc).__name__)) from None
    # As SpecForge's parser: the template's text holds the special tokens it wants.
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = [int(i) for i in enc["input_ids"]]
    mask = [1 if end > start and any(a <= start < b for a, b in spans) else 0 for start, end in enc["offset_mapping"]]
    if not ids:
        raise Skip("renders to no tokens")
    return ids, mask


def ids_digest(ids):
    return hashlib.sha256(struct.pack("<%dq" % len(ids), *ids)).hexdigest()


def runs(mask):
    """The mask as [start, end) runs of ones (small in the record)."""
    out, start = [], None
    for i, m in enumerate(mask):
        if m and start is None:
            start = i
        elif not m and start is not None:
            out.append([start, i])
            start = None
    if start is not None:
        out.append([start, len(mask)])
    return out


def unruns(spans, n):
    mask = [0] * n
    for a, b in spans:
        mask[a:b] = [1] * (b - a)
    return mask


class Harvested:
    """A sample made from a production server's request dump: its ids, mask and source."""

    def __init__(self, item):
        self.ids, self.mask, self.source = item.ids, item.mask, item.source


def harvested(run):
    """(where, rid, Harvested, None) for each sample of the request dumps, as conversations()
    gives lines; requests that give none are counted by reason in run.reasons."""
    args = run.args
    options = request_dumps.Options(
        keep_finish=args.keep_finish, sample_fraction=args.sample_fraction, seed=args.seed,
        min_tokens=args.min_tokens, max_tokens=args.max_tokens or args.context_length and args.context_length - 1,
        min_completion=args.min_completion, dedup=not args.no_dedup,
        max_bytes=args.max_dump_size << 20, min_age=args.min_age,
    )
    paths = request_dumps.dump_files(args.request_dumps, min_age=args.min_age)
    taken = 0
    for item in request_dumps.harvest(paths, options, run.tokenizer, bad=run.bad_dump):
        run.read += 1
        if item.ids is None:
            run.reasons[item.reason] = run.reasons.get(item.reason, 0) + 1
            if item.reason == "malformed":
                run.problem(item.where(), None, item.detail or "malformed")
            continue
        if args.max_requests is not None and taken >= args.max_requests:
            return
        taken += 1
        run.progress.total = taken  # the samples found so far: the total grows as the dumps are read
        yield item.where(), item.rid, Harvested(item), None


# ---------------------------------------------------------------------------------------
# The dump folders: which rids have a sample, complete or partial


def sample_files(dirs):
    for top in dirs:
        for root, subdirs, names in os.walk(top):
            subdirs[:] = [d for d in subdirs if not d.startswith(".")]
            for name in names:
                if not name.startswith(".") and (name.endswith(".ckpt") or name.endswith(".ckpt.partial")):
                    yield os.path.join(root, name)


class Folders:
    """The samples in the dump folders, by rid; rescanned for new files as they land."""

    def __init__(self, dirs):
        self.dirs = dirs
        self.seen = set()
        self.by_rid = dict()  # rid -> [path, ...] in name order
        self.unreadable = dict()

    def scan(self):
        """New sample files since the last scan: [(rid, path)]."""
        new = []
        for path in sample_files(self.dirs):
            if path in self.seen:
                continue
            try:
                rid = slm.Sample(path).data.get("rid")
            except FileNotFoundError:
                continue  # gone between the listing and the read (a duplicate removed)
            except Exception as exc:
                if path not in self.unreadable:
                    self.unreadable[path] = str(exc)
                continue
            self.seen.add(path)
            self.unreadable.pop(path, None)
            if rid is None:
                continue
            self.by_rid.setdefault(str(rid), []).append(path)
            new.append((str(rid), path))
        return new

    def idle(self):
        """True when every dump writer in the folders has written all it queued."""
        for top in self.dirs:
            for root, _dirs, names in os.walk(top):
                for name in names:
                    if name.startswith(".hs_dump_status_") and name.endswith(".json"):
                        try:
                            with open(os.path.join(root, name)) as f:
                                info = json.load(f)
                        except (OSError, ValueError):
                            continue
                        if info.get("state") == "running" and int(info.get("queued", 0)) > int(info.get("written", 0)) + int(info.get("dropped", 0)):
                            return False
        return True


# ---------------------------------------------------------------------------------------
# The record


class Record:
    """Append-only JSONL: each line is flushed as it is written, so a kill loses nothing said."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.sent = dict()  # rid -> the "sent" entry
        self.masked = set()
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue  # a line cut by a kill
                    if entry.get("event") == "sent":
                        self.sent[entry["rid"]] = entry
                    elif entry.get("event") == "masked":
                        self.masked.add(entry["rid"])
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        # private (0600) from its creation: with request dumps it names users' requests
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        self.file = os.fdopen(fd, "a", encoding="utf-8")

    def write(self, **entry):
        entry["time"] = round(time.time(), 3)
        line = json.dumps(entry, sort_keys=True) + "\n"
        with self.lock:
            self.file.write(line)
            self.file.flush()

    def close(self):
        with self.lock:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()


# ---------------------------------------------------------------------------------------
# The server


class Server:
    def __init__(self, url, timeout):
        parts = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("%s is not an http(s) URL" % url)
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, parts.port
        self.base = parts.path.rstrip("/")
        self.timeout = timeout
        self.local = threading.local()
        self.url = url

    def _connection(self):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            conn = cls(self.host, self.port, timeout=self.timeout)
            self.local.conn = conn
        return conn

    def request(self, method, path, body=None):
        """(status, parsed JSON or text); OSError / HTTPException on a transport failure."""
        conn = self._connection()
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        try:
            conn.request(method, self.base + path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except BaseException:
            conn.close()
            self.local.conn = None
            raise
        if resp.getheader("connection", "").lower() == "close":
            conn.close()
            self.local.conn = None
        try:
            payload = json.loads(raw.decode("utf-8")) if raw else None
        except (ValueError, UnicodeDecodeError):
            payload = raw.decode("utf-8", "replace")
        return resp.status, payload


def error_text(payload):
    if isinstance(payload, dict):
        err = payload.get("error", payload)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("detail") or json.dumps(err))[:400]
        return str(err)[:400]
    return str(payload)[:400]


# ---------------------------------------------------------------------------------------
# Progress


class Progress:
    def __init__(self, mode, total):
        self.mode = mode if mode != "auto" else ("bar" if sys.stderr.isatty() else "lines")
        self.total, self.start, self.last = total, time.monotonic(), 0.0
        self.lock = threading.Lock()

    def show(self, stats, final=False):
        if self.mode == "none":
            return
        now = time.monotonic()
        with self.lock:
            if not final and now - self.last < (0.2 if self.mode == "bar" else 10.0):
                return
            self.last = now
        elapsed = max(now - self.start, 1e-9)
        done = stats["done"] + stats["skipped"] + stats["failed"]
        rate = stats["tokens"] / elapsed
        left = self.total - done
        per = elapsed / max(stats["done"] + stats["failed"], 1)
        eta = "--:--" if not stats["done"] else _clock(left * per)
        text = "%d/%d conversations, %s tokens/s, ETA %s (%d sent, %d done before, %d skipped)" % (
            done,
            self.total,
            _human(rate),
            eta,
            stats["done"],
            stats["on_disk"] + stats["answered"],
            stats["failed"],
        )
        if self.mode == "bar":
            width = 24
            filled = int(width * done / max(self.total, 1))
            sys.stderr.write("\r[%s%s] %s\x1b[K" % ("#" * filled, "." * (width - filled), text))
            if final:
                sys.stderr.write("\n")
        else:
            sys.stderr.write("%s: %s\n" % (PROG, text))
        sys.stderr.flush()


def _clock(seconds):
    seconds = int(seconds)
    return "%d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60)


def _human(x):
    for unit in ("", "k", "M"):
        if x < 1000:
            return "%.1f%s" % (x, unit)
        x /= 1000.0
    return "%.1fG" % x


# ---------------------------------------------------------------------------------------
# The run


class Run:
    def __init__(self, args, tokenizer):
        self.args, self.tokenizer = args, tokenizer
        self.folders = Folders(args.dump_dir) if args.dump_dir else None
        self.record = Record(args.record)
        self.stats = dict(done=0, skipped=0, failed=0, tokens=0, on_disk=0, answered=0, masked=0, partial=0, duplicates=0)
        self.lock = threading.Lock()
        self.pending = dict()  # rid -> (digest, mask runs, tokens, line): sent, sample not landed yet
        self.complete = dict()  # rid -> path of its complete sample
        self.stop = threading.Event()
        self.problems = []
        self.progress = None
        self.reasons, self.read, self.bad_dumps = dict(), 0, []  # request dumps: skipped by reason

    def say(self, text):
        if self.progress is not None and self.progress.mode == "bar":
            sys.stderr.write("\r\x1b[K")
        sys.stderr.write("%s: %s\n" % (PROG, text))
        sys.stderr.flush()

    def problem(self, line, rid, why):
        with self.lock:
            self.stats["failed"] += 1
            self.problems.append((line, rid, why))
        where = line if isinstance(line, str) else "%s:%d" % (self.args.conversations, line)
        self.say("%s: skipped%s: %s" % (where, " (rid %s)" % rid if rid else "", why))

    def bad_dump(self, path, why):
        """A request dump refused as a whole (named; the exit status is then 1)."""
        with self.lock:
            self.stats["failed"] += 1
            self.bad_dumps.append(path)
        self.say("%s: not read: %s" % (request_dumps.quoted(path, 300), why))

    # --- the samples on disk

    def land(self, rid, path):
        """A sample file for `rid` appeared: set its mask, or note a duplicate or a partial."""
        with self.lock:
            want = self.pending.get(rid)
            if want is None:
                entry = self.record.sent.get(rid)
                if entry is None:
                    return  # not ours (another job shares the folder)
                want = (entry["ids_sha256"], entry["mask"], entry["tokens"], entry.get("line"))
        digest, spans, tokens, line = want
        if path.endswith(".ckpt.partial"):
            with self.lock:
                self.stats["partial"] += 1
            self.say(
                "%s: rid %s landed as a partial sample (chunked prefill cut it, or a cached prefix): "
                "launch with the flags sglang-hs-dump prints; a rerun sends it again" % (path, rid)
            )
            return
        sample = slm.Sample(path)
        ids = sample.input_ids()
        if len(ids) != tokens or ids_digest(ids) != digest:
            self.say("%s: rid %s holds other tokens than were sent (%d, sent %d); left as it is" % (path, rid, len(ids), tokens))
            return
        with self.lock:
            kept = self.complete.get(rid)
            if kept is not None and kept != path:
                # the same request processed twice (a retry after a lost answer): one is kept
                self.stats["duplicates"] += 1
                duplicate = True
            else:
                self.complete[rid] = path
                duplicate = False
        if duplicate:
            os.unlink(path)
            self.say("%s: removed, a second sample of rid %s (kept %s)" % (path, rid, kept))
            return
        mask = unruns(spans, tokens)
        if sample.mask() != mask:
            sample.write_mask(mask)
        with self.lock:
            self.pending.pop(rid, None)
            self.stats["masked"] += 1
        self.record.write(event="masked", rid=rid, file=os.path.basename(path))

    def watch(self):
        """The lander: new files in the dump folders get their masks as they appear."""
        while True:
            finished = self.stop.is_set()
            with self.lock:
                new = self.folders.scan()
            for rid, path in new:
                try:
                    self.land(rid, path)
                except Exception as exc:
                    self.say("%s: loss_mask not set: %s" % (path, exc))
            if finished:
                return
            self.stop.wait(0.2)

    def on_disk(self, rid, digest, tokens):
        """Is a complete sample of these tokens on disk? Partial ones of the rid are removed."""
        if self.folders is None:
            return False
        good = None
        for path in list(self.folders.by_rid.get(rid, ())):
            if path.endswith(".ckpt.partial"):
                continue
            try:
                ids = slm.Sample(path).input_ids()
            except Exception:
                continue
            if len(ids) == tokens and ids_digest(ids) == digest:
                if good is None:
                    good = path
                else:  # the same request written twice (a retry after a lost answer)
                    os.unlink(path)
                    self.folders.by_rid[rid].remove(path)
                    self.stats["duplicates"] += 1
                    self.say("%s: removed, a second sample of rid %s (kept %s)" % (path, rid, good))
        if good is None:
            for path in self.folders.by_rid.get(rid, ()):
                if path.endswith(".ckpt.partial"):
                    os.unlink(path)
                    self.say("%s: removed, a partial sample of rid %s that is sent again" % (path, rid))
            self.folders.by_rid.pop(rid, None)
        return good

    # --- sending

    def send_one(self, server, job):
        line, rid, ids = job["line"], job["rid"], job["ids"]
        body = dict(input_ids=ids, rid=rid, sampling_params=dict(max_new_tokens=1, temperature=0.0), stream=False)
        delay = 0.5
        for attempt in range(self.args.retries + 1):
            if self.stop.is_set() and attempt:
                return None
            try:
                status, payload = server.request("POST", "/generate", body)
            except (OSError, http.client.HTTPException) as exc:
                status, payload = None, "%s: %s" % (type(exc).__name__, exc)
            if status == 200:
                return payload
            if status is not None and status not in RETRY_STATUS:
                raise Skip("the server refused it (HTTP %d): %s" % (status, error_text(payload)))
            if attempt < self.args.retries:
                time.sleep(delay)
                delay = min(delay * 2, 30.0)
        raise Skip("no answer after %d tries: %s" % (self.args.retries + 1, error_text(payload) if status else payload))

    def worker(self, server, jobs):
        while True:
            job = jobs.get()
            if job is None:
                return
            try:
                self.deliver(server, job)
            except Exception as exc:  # never lose the run, or a thread, to one request
                with self.lock:
                    self.pending.pop(job["rid"], None)
                self.problem(job["line"], job["rid"], "%s: %s" % (type(exc).__name__, exc))

    def deliver(self, server, job):
        """Send one conversation and record that the server answered it."""
        rid, ids = job["rid"], job["ids"]
        if self.stop.is_set():
            with self.lock:
                self.pending.pop(rid, None)
            return
        try:
            answer = self.send_one(server, job)
        except Skip as exc:
            with self.lock:
                self.pending.pop(rid, None)
            self.problem(job["line"], rid, str(exc))
            return
        if answer is None:  # stopped between retries
            with self.lock:
                self.pending.pop(rid, None)
            return
        meta = answer.get("meta_info") if isinstance(answer, dict) else None
        prompt = meta.get("prompt_tokens") if isinstance(meta, dict) else None
        if isinstance(prompt, int) and prompt != len(ids):
            self.say("rid %s: the server counted %d prompt tokens, %d were sent" % (rid, prompt, len(ids)))
        entry = dict(rid=rid, line=job["line"], tokens=len(ids), ids_sha256=job["digest"], mask=job["mask"])
        if job.get("source"):
            entry["source"] = job["source"]  # where a harvested sample came from
        self.record.write(event="sent", **entry)
        with self.lock:
            self.record.sent[rid] = entry
            self.stats["done"] += 1
            self.stats["tokens"] += len(ids)
        self.progress.show(self.stats)

    def run(self):
        args = self.args
        total = count_lines(args.conversations) if not args.request_dumps else 0
        self.progress = Progress(args.progress, total)
        server = Server(args.url, args.timeout) if not args.dry_run else None
        if self.folders is not None:
            self.folders.scan()
        watcher = None
        if self.folders is not None and not args.dry_run:
            watcher = threading.Thread(target=self.watch, name="lander", daemon=True)
            watcher.start()
        jobs = queue.Queue(maxsize=max(2 * args.concurrency, 4))
        workers = [
            threading.Thread(target=self.worker, args=(server, jobs), name="send-%d" % k, daemon=True)
            for k in range(args.concurrency if not args.dry_run else 0)
        ]
        for w in workers:
            w.start()
        seen = dict()
        interrupted = False
        try:
            source = harvested(self) if args.request_dumps else conversations(args.conversations)
            for line, rid, messages, tools in source:
                if self.stop.is_set():
                    break
                if isinstance(messages, Skip):
                    self.problem(line, rid, str(messages))
                    continue
                if rid in seen:
                    self.problem(line, rid, "rid %s is also line %d" % (rid, seen[rid]))
                    continue
                seen[rid] = line
                try:
                    ids, mask = (messages.ids, messages.mask) if isinstance(messages, Harvested) else render(self.tokenizer, messages, tools)
                    if args.context_length and len(ids) >= args.context_length:
                        raise Skip("%d tokens, the server's context length is %d" % (len(ids), args.context_length))
                except Skip as exc:
                    self.problem(line, rid, str(exc))
                    continue
                digest = ids_digest(ids)
                with self.lock:
                    landed = self.on_disk(rid, digest, len(ids))
                    if not landed and not args.dry_run:
                        sent = self.record.sent.get(rid)
                        if self.folders is None and sent is not None and sent["ids_sha256"] == digest:
                            landed = "answered"
                if landed:
                    with self.lock:
                        self.stats["on_disk" if landed != "answered" else "answered"] += 1
                        self.stats["skipped"] += 1
                        if landed != "answered":
                            self.complete[rid] = landed
                    if landed != "answered" and self.folders is not None and not args.dry_run:
                        self.pending[rid] = (digest, runs(mask), len(ids), line)
                        self.land(rid, landed)  # its mask, if an earlier run stopped before it
                    self.progress.show(self.stats)
                    continue
                if args.dry_run:
                    if isinstance(messages, Harvested):
                        print(json.dumps(dict(rid=rid, tokens=len(ids), generated=sum(mask), source=messages.source), sort_keys=True))
                    with self.lock:
                        self.stats["done"] += 1
                        self.stats["tokens"] += len(ids)
                    continue
                spans = runs(mask)
                with self.lock:
                    if self.folders is not None:
                        self.pending[rid] = (digest, spans, len(ids), line)
                while not self.stop.is_set():
                    try:
                        job = dict(line=line, rid=rid, ids=ids, digest=digest, mask=spans)
                        if isinstance(messages, Harvested):
                            job["source"] = messages.source
                        jobs.put(job, timeout=0.2)
                        break
                    except queue.Full:
                        continue
        except KeyboardInterrupt:
            interrupted = True
            self.stop.set()
            self.say("interrupted: finishing the requests in flight (Ctrl-C again to quit at once)")
        try:
            for _ in workers:
                jobs.put(None)
            for w in workers:
                while w.is_alive():
                    w.join(0.2)
            if watcher is not None:
                self.wait_landing()
        except KeyboardInterrupt:
            interrupted = True
        self.stop.set()
        if watcher is not None:
            watcher.join()
        self.progress.show(self.stats, final=True)
        self.record.close()
        return self.summary(interrupted)

    def wait_landing(self):
        """After the last answer: wait until every sample landed, or the dump went idle
        without them (then they are reported missing; a rerun sends them again)."""
        quiet_since, count = time.monotonic(), -1
        while True:
            with self.lock:
                left = len(self.pending)
            if not left:
                return
            if left != count:
                count, quiet_since = left, time.monotonic()
            quiet = time.monotonic() - quiet_since
            if quiet >= self.args.land_timeout or (quiet >= 2.0 and self.folders.idle() and quiet >= self.args.land_grace):
                return
            time.sleep(0.2)

    def summary(self, interrupted):
        s = self.stats
        with self.lock:
            missing = sorted(self.pending.items(), key=lambda kv: kv[1][3] or 0)
        parts = ["%d conversations sent (%d tokens)" % (s["done"], s["tokens"])]
        if self.args.dry_run:
            parts = ["dry run: %d conversations would be sent (%d tokens)" % (s["done"], s["tokens"])]
        if self.folders is not None:
            parts.append("%d already complete on disk" % s["on_disk"])
        else:
            parts.append("%d answered in an earlier run (the record)" % s["answered"])
        if self.folders is not None and not self.args.dry_run:
            parts.append("%d loss masks set" % s["masked"])
        if s["failed"]:
            parts.append("%d skipped (named above)" % s["failed"])
        if s["duplicates"]:
            parts.append("%d duplicate samples removed" % s["duplicates"])
        print("%s: %s" % (PROG, "; ".join(parts)))
        if self.args.request_dumps:
            print("%s: %s" % (PROG, harvest_counts(self)))
        if missing and not interrupted:
            shown = ", ".join("%s (line %s)" % (rid, want[3]) for rid, want in missing[:10])
            print(
                "%s: %d sent conversations have no complete sample in %s: %s%s; is SGLANG_HS_DUMP_DIR that folder? "
                "Rerun the same command to send them again" % (
                    PROG,
                    len(missing),
                    ", ".join(self.args.dump_dir),
                    shown,
                    ", ..." if len(missing) > 10 else "",
                ),
            )
        if interrupted:
            left = self.progress.total - (s["done"] + s["skipped"] + s["failed"])
            print("%s: interrupted with %d conversations left; rerun the same command to go on (the record is %s)" % (PROG, left, self.args.record))
            return 130
        return 1 if s["failed"] or missing else 0


def harvest_counts(run):
    """The request dumps' line of the summary: what was read, what each skip reason took."""
    taken = run.progress.total if run.progress is not None else 0
    text = "request dumps: %d requests read, %d samples taken" % (run.read, taken or 0)
    if run.bad_dumps:
        text += ", %d files not read (named above)" % len(run.bad_dumps)
    skipped = [(run.reasons[k], k) for k, _ in request_dumps.REASONS if run.reasons.get(k)]
    if skipped:
        text += "; skipped: " + ", ".join("%d %s" % (n, request_dumps.REASON_TEXT[k]) for n, k in skipped)
    return text


def masks_only(args):
    """Set the masks of the samples in the folders from the record alone."""
    record = Record(args.record)
    folders = Folders(args.dump_dir)
    done = wrong = 0
    by_rid = dict()
    for rid, path in folders.scan():
        by_rid.setdefault(rid, []).append(path)
    removed = 0
    for rid, entry in record.sent.items():
        paths = [p for p in by_rid.get(rid, ()) if p.endswith(".ckpt")]
        kept = None
        for path in paths:
            sample = slm.Sample(path)
            ids = sample.input_ids()
            if len(ids) != entry["tokens"] or ids_digest(ids) != entry["ids_sha256"]:
                print("%s: rid %s holds other tokens than were sent; left as it is" % (path, rid), file=sys.stderr)
                wrong += 1
                continue
            if kept is not None:
                os.unlink(path)
                removed += 1
                continue
            kept = path
            mask = unruns(entry["mask"], entry["tokens"])
            if sample.mask() != mask:
                sample.write_mask(mask)
            done += 1
    missing = [rid for rid in record.sent if not any(p.endswith(".ckpt") for p in by_rid.get(rid, ()))]
    print("%s: %d loss masks set from %s; %d samples with other tokens; %d duplicates removed; %d sent conversations without a complete sample" % (PROG, done, args.record, wrong, removed, len(missing)))
    record.close()
    return 1 if wrong or missing else 0


def parse(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--conversations", help="JSONL: one conversation per line")
    p.add_argument("--request-dumps", nargs="+", metavar="DIR", help="instead of --conversations: the *.pkl request dumps of production SGLang servers (their /configure_logging dump_requests_folder) under these folders")
    p.add_argument("--tokenizer", help="the model's tokenizer: a local folder (or a hub name)")
    p.add_argument("--chat-template", help="a Jinja chat template file, instead of the tokenizer's")
    p.add_argument("--url", default="http://127.0.0.1:30000", help="the server, or the router in front of several (default %(default)s)")
    p.add_argument("--dump-dir", action="append", default=[], help="where the samples land (SGLANG_HS_DUMP_DIR; a folder of node folders is scanned too); repeatable")
    p.add_argument("--record", help="the record of what was sent (default: DUMP_DIR/%s)" % RECORD_NAME)
    p.add_argument("--concurrency", type=int, default=16, help="requests at once (default %(default)s)")
    p.add_argument("--retries", type=int, default=5, help="tries after a transient failure (default %(default)s)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for one answer (default %(default)s)")
    p.add_argument("--context-length", type=int, help="skip conversations of this many tokens or more")
    p.add_argument("--land-timeout", type=float, default=600.0, help="seconds to wait for samples that do not land (default %(default)s)")
    p.add_argument("--land-grace", type=float, default=10.0, help="seconds to wait once the dump is idle (default %(default)s)")
    p.add_argument("--progress", choices=("auto", "bar", "lines", "none"), default="auto")
    p.add_argument("--python", help="the interpreter to run in (default python3; read by the command itself)")
    p.add_argument("--dry-run", action="store_true", help="render and check every conversation, send nothing")
    p.add_argument("--masks-only", action="store_true", help="set the masks in --dump-dir from the record; send nothing")
    h = p.add_argument_group("request dumps (--request-dumps)")
    h.add_argument("--keep-finish", default="stop", help="finish reasons kept, comma-separated: stop, length (default %(default)s; aborted requests are never kept)")
    h.add_argument("--sample-fraction", type=float, default=1.0, help="keep this fraction of the requests, chosen by --seed (default %(default)s)")
    h.add_argument("--seed", default="0", help="the seed of --sample-fraction (default %(default)s)")
    h.add_argument("--min-tokens", type=int, default=2, help="skip samples of fewer tokens, prompt and completion (default %(default)s)")
    h.add_argument("--max-tokens", type=int, help="skip samples of more tokens (default: under --context-length)")
    h.add_argument("--min-completion", type=int, default=1, help="skip completions of fewer generated tokens (default %(default)s)")
    h.add_argument("--no-dedup", action="store_true", help="keep a prompt and completion seen before (default: the first only)")
    h.add_argument("--max-requests", type=int, help="take at most this many samples")
    h.add_argument("--min-age", type=float, default=60.0, help="skip dump files modified less than this many seconds ago: still being written (default %(default)s)")
    h.add_argument("--max-dump-size", type=int, default=request_dumps.DEFAULT_MAX_BYTES >> 20, help="MiB: larger dump files are not read (default %(default)s)")
    args = p.parse_args(argv)
    if args.record is None:
        if not args.dump_dir:
            p.error("--record FILE is needed without --dump-dir")
        args.record = os.path.join(args.dump_dir[0], RECORD_NAME)
    if args.masks_only:
        if not args.dump_dir:
            p.error("--masks-only needs --dump-dir")
        return args
    if args.request_dumps:
        if args.conversations:
            p.error("--request-dumps and --conversations are two inputs: give one")
        kept = [k.strip() for k in args.keep_finish.split(",") if k.strip()]
        if not kept or any(k not in ("stop", "length") for k in kept):
            p.error("--keep-finish takes stop and/or length")
        args.keep_finish = kept
        if not 0.0 < args.sample_fraction <= 1.0:
            p.error("--sample-fraction must be over 0 and at most 1")
        if args.max_requests is not None and args.max_requests < 0 or args.min_age < 0 or args.max_dump_size < 1:
            p.error("--max-requests and --min-age must be 0 or more, --max-dump-size 1 or more")
        for d in args.request_dumps:
            if not os.path.isdir(d):
                p.error("--request-dumps %s: not a folder" % d)
    elif not args.conversations or not args.tokenizer:
        p.error("--conversations and --tokenizer are needed (or --request-dumps DIR)")
    if args.concurrency < 1 or args.retries < 0:
        p.error("--concurrency must be 1 or more, --retries 0 or more")
    for d in args.dump_dir:
        if os.path.exists(d) and not os.path.isdir(d):
            p.error("--dump-dir %s: not a folder" % d)
        if not os.path.exists(d) and not args.dry_run:
            # the dump makes it on its first prefill: made now the same way (0700), so that
            # samples can be watched for from the start
            os.makedirs(d, mode=0o700)
            print("%s: made %s (private, as the dump makes it); the server must dump there" % (PROG, d), file=sys.stderr)
    return args


def load_tokenizer(args):
    try:
        from transformers import AutoTokenizer
    except ImportError:
        print(
            "%s: needs the transformers package in %s: %s -m pip install transformers "
            "(or pass --python with the interpreter of an environment that has it)" % (PROG, sys.executable, sys.executable),
            file=sys.stderr,
        )
        return None
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer, trust_remote_code=True)
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8") as f:
            tokenizer.chat_template = f.read()
    return tokenizer


def main(argv=None):
    args = parse(argv)
    if args.masks_only:
        return masks_only(args)
    if not args.request_dumps and not os.path.isfile(args.conversations):
        print("%s: %s: no such file" % (PROG, args.conversations), file=sys.stderr)
        return 2
    # request dumps need the tokenizer only for requests that came as text
    tokenizer = load_tokenizer(args) if args.tokenizer else None
    if tokenizer is None and args.tokenizer:
        return 2
    try:
        run = Run(args, tokenizer)
    except ValueError as exc:
        print("%s: %s" % (PROG, exc), file=sys.stderr)
        return 2
    return run.run()


def _terminate(_signum, _frame):
    raise KeyboardInterrupt()


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the requests in flight are answered, the record flushed.
    signal.signal(signal.SIGTERM, _terminate)
    sys.exit(main())
