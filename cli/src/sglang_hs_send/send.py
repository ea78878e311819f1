"""sglang-hs-send: send training conversations to a patched SGLang server, once each.

Reads conversations (JSONL, one {"messages": [...]} per line in the OpenAI shape, or
ShareGPT's {"conversations": [{"from", "value"}]}; "rid" or "id" names a conversation, else
a hash of its messages does), renders each with the model's tokenizer and chat template
exactly as scripts/specforge_loss_mask.py does, and POSTs the token ids to SGLang's native
/generate with an explicit rid and one new token. The server's dump (sglang-hs-dump) writes
one sample per request; when a sample lands in a --dump-dir folder, its loss_mask is set
(SpecForge's rule: assistant tokens only) and checked against what was sent.

What was sent is kept in a record (JSONL, append-only, one line per event): a rerun of the
same command skips every conversation whose complete sample is on disk (or, without a dump
folder, that the server answered) and sends what is missing or partial again. The record
also holds each conversation's mask, so that `--masks-only` sets the masks of a folder
merged from several nodes without the tokenizer or the conversations.

Before the first conversation it checks, each failure one line and exit status 2: that
`jinja2` and `transformers` import, that the server answers (/health or /get_model_info, a
few tries), that the tokenizer loads (its own code, e.g. a tiktoken-based class, only with
--trust-remote-code). The first conversation is then sent alone, and with a dump folder its
sample must land there. Tokenizers without offsets (Python classes) get the same mask as fast
ones (specforge_loss_mask.tokens_and_mask).

This file runs inside the `sglang-hs-send` command (which embeds it, with the loss-mask
module, and starts the chosen Python with it); it needs `transformers` and `jinja2` for the
tokenizer and its chat template, and no PyTorch: samples are read and patched as the zip
archives torch.save writes.
"""

import argparse
import hashlib
import http.client
import importlib.util
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

PROG = "sglang-hs-send"
RECORD_NAME = ".hs_send_record.jsonl"
# Transient answers: the server (or the router in front of it) is busy, restarting or gone
# for a moment. Anything else in 4xx is the request's own fault and is not retried.
RETRY_STATUS = (408, 429, 500, 502, 503, 504)
# Seconds to wait for the first sample once the server answered and the dump is idle.
FIRST_SAMPLE_WAIT = 10.0


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
    ids, mask = slm.tokens_and_mask(tokenizer, text, spans)
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


def dump_statuses(dirs):
    """The status files of the dumps writing into `dirs` (their names; at most a few)."""
    found = []
    for top in dirs:
        for root, _dirs, names in os.walk(top):
            found += sorted(n for n in names if n.startswith(".hs_dump_status_") and n.endswith(".json"))
            if len(found) >= 3:
                return found
    return found


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
        self.file = open(path, "a", encoding="utf-8")

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
        # Until a sample of a conversation sent lands in the dump folders, each is sent alone
        # (first_sample): a server that dumps elsewhere stops the run at the first one.
        self.unproven = self.folders is not None and not args.dry_run
        self.fatal = None

    def say(self, text):
        if self.progress is not None and self.progress.mode == "bar":
            sys.stderr.write("\r\x1b[K")
        sys.stderr.write("%s: %s\n" % (PROG, text))
        sys.stderr.flush()

    def problem(self, line, rid, why):
        with self.lock:
            self.stats["failed"] += 1
            self.problems.append((line, rid, why))
        self.say("%s:%d: skipped%s: %s" % (self.args.conversations, line, " (rid %s)" % rid if rid else "", why))

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
        self.record.write(event="sent", **entry)
        with self.lock:
            self.record.sent[rid] = entry
            self.stats["done"] += 1
            self.stats["tokens"] += len(ids)
        self.progress.show(self.stats)

    def run(self):
        args = self.args
        total = count_lines(args.conversations)
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
            for line, rid, messages, tools in conversations(args.conversations):
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
                    ids, mask = render(self.tokenizer, messages, tools)
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
                    with self.lock:
                        self.stats["done"] += 1
                        self.stats["tokens"] += len(ids)
                    continue
                spans = runs(mask)
                with self.lock:
                    if self.folders is not None:
                        self.pending[rid] = (digest, spans, len(ids), line)
                if self.unproven and self.first_sample(server, dict(line=line, rid=rid, ids=ids, digest=digest, mask=spans)):
                    continue
                while not self.stop.is_set():
                    try:
                        jobs.put(dict(line=line, rid=rid, ids=ids, digest=digest, mask=spans), timeout=0.2)
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
        if self.fatal:
            self.record.close()
            self.say(self.fatal)
            return 2
        self.progress.show(self.stats, final=True)
        self.record.close()
        return self.summary(interrupted)

    def first_sample(self, server, job):
        """Send `job` alone and wait for its sample in the dump folders (the dump writes its
        status file before the server answers, the sample soon after): the check that the
        server dumps where the sender looks. Sets `fatal` (one line) when the server answered
        and no sample of it came; a conversation the server did not take leaves the check to
        the next one. True: the job was handled."""
        rid, folders = job["rid"], self.folders
        with self.lock:
            done, seen = self.stats["done"], len(folders.seen)
        self.deliver(server, job)
        with self.lock:
            if self.stats["done"] == done:
                return True  # refused or not answered, and named: the next one checks
        start = time.monotonic()
        while not self.stop.is_set():
            with self.lock:
                landed, others = bool(folders.by_rid.get(rid)), len(folders.seen) - seen
            if landed:
                self.unproven = False
                return True
            waited = time.monotonic() - start
            if waited >= self.args.land_timeout or (waited >= FIRST_SAMPLE_WAIT and folders.idle()):
                break
            time.sleep(0.1)
        else:
            return True  # interrupted
        with self.lock:
            self.pending.pop(rid, None)
        where = ", ".join(self.args.dump_dir)
        dumps = dump_statuses(self.args.dump_dir)
        if others:
            self.fatal = (
                "%d samples came to %s, none of rid %s, which the server at %s answered: the sender needs "
                "SGLang 0.5.10 or newer (samples with rids), and a folder no other job dumps into" % (others, where, rid, self.args.url)
            )
        elif dumps:
            self.fatal = (
                "the server at %s answered rid %s, but no sample of it came to %s in %d s, where a dump keeps "
                "its status (%s): the dump is capped (SGLANG_HS_DUMP_MAX) or turned itself off (its warning is in "
                "the server's log), or that dump is another server's" % (
                    self.args.url, rid, where, int(time.monotonic() - start), slm.one_line(dumps[0]))
            )
        else:
            self.fatal = (
                "the server at %s answered rid %s, but no sample of it came to %s in %d s: start the server with "
                "SGLANG_HS_DUMP_DIR=%s and a patched model file (sglang-hs-dump --installed --check)" % (
                    self.args.url, rid, where, int(time.monotonic() - start), self.args.dump_dir[0])
            )
        self.stop.set()
        return True

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
    p.add_argument("--tokenizer", help="the model's tokenizer: a local folder (or a hub name)")
    p.add_argument("--chat-template", help="a Jinja chat template file, instead of the tokenizer's")
    p.add_argument("--trust-remote-code", action="store_true", help="run the tokenizer's own code (an auto_map class, e.g. tiktoken-based)")
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
    args = p.parse_args(argv)
    if args.record is None:
        if not args.dump_dir:
            p.error("--record FILE is needed without --dump-dir")
        args.record = os.path.join(args.dump_dir[0], RECORD_NAME)
    if args.masks_only:
        if not args.dump_dir:
            p.error("--masks-only needs --dump-dir")
        return args
    if not args.conversations or not args.tokenizer:
        p.error("--conversations and --tokenizer are needed")
    if args.concurrency < 1 or args.retries < 0:
        p.error("--concurrency must be 1 or more, --retries 0 or more")
    for d in args.dump_dir:
        if os.path.exists(d) and not os.path.isdir(d):
            p.error("--dump-dir %s: not a folder" % d)
    return args


def make_dump_dirs(args):
    """The dump makes its folder on its first prefill: a missing one is made now the same way
    (0700), once the preflight passed, so that samples can be watched for from the start."""
    for d in args.dump_dir:
        if not os.path.exists(d) and not args.dry_run:
            os.makedirs(d, mode=0o700)
            print("%s: made %s (private, as the dump makes it); the server must dump there" % (PROG, d), file=sys.stderr)


# ---------------------------------------------------------------------------------------
# Preflight: what must hold before the first conversation, each failure said in one line


def missing_packages():
    """Why the chat templates cannot be rendered here (transformers or jinja2 missing), or None."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # its import-time advice is not ours to print
    need = []  # (what is missing, what pip installs)
    try:
        import jinja2

        version = tuple(int(x) if x.isdigit() else 0 for x in (jinja2.__version__ + ".0").split(".")[:2])
        if version < (3, 1):  # transformers' own minimum for chat templates
            need.append(("jinja2 3.1 or newer (found %s)" % slm.one_line(jinja2.__version__), "'jinja2>=3.1'"))
    except Exception:  # absent, or shadowed by something that is not it
        need.append(("jinja2", "jinja2"))
    if importlib.util.find_spec("transformers") is None:
        need.append(("transformers", "transformers"))
    elif not need:  # (its import may need jinja2: tried only with jinja2 there)
        try:
            import transformers  # noqa: F401
        except Exception as exc:
            return "cannot import transformers in %s: %s" % (sys.executable, slm.one_line(exc) or type(exc).__name__)
    if not need:
        return None
    return "needs %s in %s for the tokenizer and its chat template: %s -m pip install %s (or pass --python with the interpreter of an environment that has them)" % (
        " and ".join(n for n, _ in need),
        sys.executable,
        sys.executable,
        " ".join(p for _, p in need),
    )


SERVER_TRIES, SERVER_WAIT, SERVER_TIMEOUT = 3, 0.5, 2.0


def server_down(url):
    """Why the server at `url` is not ready to take conversations, or None: it must answer
    /health (or /get_model_info) with 200 within a few tries (about 8 s at most)."""
    try:
        server = Server(url, SERVER_TIMEOUT)
    except ValueError as exc:
        return str(exc)
    why = None
    for attempt in range(SERVER_TRIES):
        if attempt:
            time.sleep(SERVER_WAIT)
        for path in ("/health", "/get_model_info"):
            try:
                status, _ = server.request("GET", path)
            except (OSError, http.client.HTTPException) as exc:
                why = "nothing answers at %s (%s)" % (url, slm.one_line(exc) or type(exc).__name__)
                break  # the other path would fail the same way
            if status == 200:
                return None
            why = "the server at %s answers %s with HTTP %d" % (url, path, status)
    return "%s, %d tries in a row: is it running and done loading the model (--url)?" % (why, SERVER_TRIES)


def load_tokenizer(args):
    """The tokenizer, or None after one line saying why it does not load."""
    try:
        return slm.load_tokenizer(args.tokenizer, args.trust_remote_code, args.chat_template)
    except slm.TokenizerError as exc:
        print("%s: %s" % (PROG, exc), file=sys.stderr)
        return None


def preflight(args):
    """0 when the packages import and the server answers (not asked with --dry-run); else 2,
    after one line."""
    why = missing_packages() or (None if args.dry_run else server_down(args.url))
    if why:
        print("%s: %s" % (PROG, why), file=sys.stderr)
        return 2
    return 0


def main(argv=None):
    args = parse(argv)
    if args.masks_only:
        return masks_only(args)
    if not os.path.isfile(args.conversations):
        print("%s: %s: no such file" % (PROG, args.conversations), file=sys.stderr)
        return 2
    if preflight(args):
        return 2
    tokenizer = load_tokenizer(args)
    if tokenizer is None:
        return 2
    make_dump_dirs(args)
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
