"""sglang-hs-send: send training conversations to a patched SGLang server, once each.

Reads conversations (JSONL, one {"messages": [...]} per line in the OpenAI shape, or
ShareGPT's {"conversations": [{"from", "value"}]}; "rid" or "id" names a conversation, else
a hash of its messages does), renders each with the model's tokenizer and chat template
exactly as masks.py (beside this file) does, and POSTs the token ids to SGLang's native
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

With --publish CONTROL the samples go to SpecForge's online trainer instead: the server's dump
moves each complete sample into a Mooncake store (SGLANG_HS_DUMP_SINK) and leaves a ticket in
the folder; the sender matches the ticket as it matches a sample, puts its loss mask and
announces it in CONTROL/refs.jsonl (publish.py beside this file), under the trainer's
back-pressure, and stops when the trainer ends.

Before the first conversation it checks, each failure one line and exit status 2: that
`jinja2` and `transformers` import, that the server answers (/health or /get_model_info, a
few tries), that the tokenizer loads (its own code, e.g. a tiktoken-based class, only with
--trust-remote-code). The first conversation is then sent alone, and with a dump folder its
sample must land there. Tokenizers without offsets (Python classes) get the same mask as fast
ones (masks.tokens_and_mask).

This file runs inside the `sglang-hs-send` command (which embeds it, with the loss-mask
module, and starts the chosen Python with it); it needs `transformers` and `jinja2` for the
tokenizer and its chat template, and no PyTorch: samples are read and patched as the zip
archives torch.save writes.
"""

import argparse
import errno
import hashlib
import http.client
import io
import importlib.util
import json
import os
import queue
import re
import signal
import socket
import stat
import struct
import sys
import threading
import time
import urllib.parse

from . import masks as slm
from . import publish
from . import request_dumps

PROG = "sglang-hs-send"
RECORD_NAME = ".hs_send_record.jsonl"
# Transient answers: the server (or the router in front of it) is busy, restarting or gone
# for a moment. Anything else in 4xx is the request's own fault and is not retried.
RETRY_STATUS = (408, 429, 500, 502, 503, 504)
# Seconds to wait for the first sample once the server answered and the dump is idle.
FIRST_SAMPLE_WAIT = 10.0


# Bounds on what is read, far above what a job needs, so that no line, record, sample or answer
# can make the sender hold more than a few of them in memory, recurse, or wait without end.
MAX_LINE = 64 << 20  # bytes of one conversation or record line
MAX_DEPTH = 64  # arrays and objects nested in one JSON value
MAX_DIGITS = 400  # digits of one JSON number
MAX_RID = slm.MAX_RID  # bytes of a rid (UTF-8): what a sample may hold
MAX_TOKENS = slm.MAX_TOKENS  # ids of one conversation or sample
MAX_ANSWER = 1 << 20  # bytes of one server answer (SGLang's to one request is a few hundred)
MAX_STATUS = 64 << 10  # bytes of a dump status file


class Skip(Exception):
    """A conversation that is named and skipped, never sent."""


class Refused(Exception):
    """The run cannot start (exit status 2): the message says why."""


class BadJSON(ValueError):
    """A line or answer that is not a JSON value within the bounds above."""


# ---------------------------------------------------------------------------------------
# Printing: rids, file names and server text never drive the terminal.

printable = slm.printable


def say(text):
    """One line on stderr, printable."""
    sys.stderr.write("%s: %s\n" % (PROG, printable(text)))
    sys.stderr.flush()


# ---------------------------------------------------------------------------------------
# Input files: regular files only, read line by line within bounds.


def open_input(path, follow=True):
    """A binary reader of the regular file at `path`; Refused for anything else (a FIFO, a
    device, a folder; a link too unless `follow`), which is never opened in a way that blocks:
    its type is looked at first, then it is opened non-blocking and checked on the handle."""
    try:
        seen = os.stat(path) if follow else os.lstat(path)
        if not stat.S_ISREG(seen.st_mode):
            raise Refused("%s: not a regular file; not read" % path)
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
        fd = os.open(path, flags | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
    except OSError as exc:
        raise Refused("%s: %s" % (path, exc.strerror or exc)) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(fd)
        raise Refused("%s: not a regular file; not read" % path)
    return os.fdopen(fd, "rb")


def lines(f, limit=MAX_LINE):
    """(line number, bytes) for each line of `f`; bytes is None for a line over `limit` bytes,
    which is skipped without being held."""
    number = 0
    while True:
        raw = f.readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) > limit:
            while raw and not raw.endswith(b"\n"):
                raw = f.readline(1 << 20)
            yield number, None
            continue
        yield number, raw


_STRING = re.compile(rb'"[^"]*"')
_PAIR = re.compile(rb"\[\]|\{\}")
_NUMBER = re.compile(rb"[0-9]{%d,}" % (MAX_DIGITS + 1))
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def load_json(raw):
    """The JSON value of `raw` (bytes), checked before it is parsed: UTF-8, at most MAX_DEPTH
    arrays and objects deep (counted without recursion), numbers of at most MAX_DIGITS digits,
    strings that are text (no lone surrogate from a `\\ud800` escape); BadJSON otherwise."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadJSON("not UTF-8 (byte %d)" % exc.start) from None
    # Outside strings only brackets nest: drop escaped pairs, then strings, then all but brackets.
    bare = _STRING.sub(b"", raw.replace(b"\\\\", b"").replace(b'\\"', b""))
    if _NUMBER.search(bare):
        raise BadJSON("a number of more than %d digits" % MAX_DIGITS)
    brackets = bare.translate(None, _NOT_BRACKETS)
    for _ in range(MAX_DEPTH):
        if not brackets:
            break
        brackets = _PAIR.sub(b"", brackets)
    if _PAIR.search(brackets) or len(brackets) > MAX_DEPTH:
        raise BadJSON("nested more than %d levels deep" % MAX_DEPTH)
    # What is left are at most MAX_DEPTH brackets without a match: json.loads says what is
    # wrong within twice MAX_DEPTH levels.
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise BadJSON("not JSON: %s" % exc) from None
    except RecursionError:  # not reached within the bounds above; kept as a guard
        raise BadJSON("nested too deeply") from None
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadJSON("a string holds a lone surrogate (a \\u%04x escape): not text" % ord(exc.object[exc.start])) from None
    return value


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def rid_problem(rid):
    """Why `rid` cannot name a sample, or None."""
    if not isinstance(rid, str) or not rid:
        return "not a non-empty string"
    if len(rid.encode("utf-8")) > MAX_RID:
        return "longer than %d bytes" % MAX_RID
    return None


# ---------------------------------------------------------------------------------------
# Conversations


def count_lines(path):
    with open_input(path) as f:
        return sum(1 for _number, raw in lines(f) if raw is None or raw.strip())


ROLES = dict(human="user", user="user", gpt="assistant", assistant="assistant", system="system", tool="tool")


def conversation_of(item):
    """(rid, messages, tools) of one parsed line; Skip naming what is wrong with it."""
    if not isinstance(item, dict):
        raise Skip("not a JSON object")
    messages = item.get("messages")
    if messages is None and "conversations" in item:
        turns = item["conversations"]
        if not isinstance(turns, list):
            raise Skip('"conversations" is not a list')
        messages = []
        for k, m in enumerate(turns):
            if not isinstance(m, dict) or not isinstance(m.get("from"), str) or not isinstance(m.get("value"), str):
                raise Skip('"conversations" item %d is not an object with "from" and "value" strings' % k)
            messages.append(dict(role=ROLES.get(m["from"], m["from"]), content=m["value"]))
    if not isinstance(messages, list) or not messages:
        raise Skip('no "messages" list of objects')
    for k, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise Skip('message %d is not an object with a "role" string' % k)
        if not isinstance(m.get("content"), (str, list, type(None))):
            raise Skip('message %d: "content" is not a string, a list of parts or null' % k)
    tools = item.get("tools")
    if not isinstance(tools, (list, type(None))):
        raise Skip('"tools" is not a list')
    rid = item.get("rid", item.get("id"))
    if rid is None:
        canon = json.dumps([messages, tools], sort_keys=True, ensure_ascii=False)
        rid = "hs-" + hashlib.sha256(canon.encode("utf-8")).hexdigest()[:20]
    elif is_int(rid):
        rid = str(rid)
    why = rid_problem(rid)
    if why is not None:
        raise Skip('"rid" is %s' % why)
    return rid, messages, tools


def conversations(path):
    """(line number, rid, messages, tools) for each line; Skip for a line that is not one."""
    with open_input(path) as f:
        for number, raw in lines(f):
            if raw is None:
                yield number, None, Skip("a line of more than %d bytes" % MAX_LINE), None
                continue
            if not raw.strip():
                continue
            try:
                rid, messages, tools = conversation_of(load_json(raw))
            except BadJSON as exc:
                yield number, None, Skip(str(exc)), None
                continue
            except Skip as exc:
                yield number, None, exc, None
                continue
            yield number, rid, messages, tools


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


def walk(dirs, report):
    """(folder, name) of the regular files under `dirs` whose names do not start with a dot, in
    hidden folders neither; links are not followed. An explicit stack, so no depth of folders
    can exhaust Python's; a folder that cannot be listed is named through `report`."""
    todo = list(reversed(dirs))
    while todo:
        top = todo.pop()
        try:
            with os.scandir(top) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            report(top, "cannot list it: %s" % (exc.strerror or exc))
            continue
        subdirs = []
        for e in entries:
            if e.name.startswith("."):
                if e.name.startswith(".hs_dump_status_") and e.name.endswith(".json"):
                    yield top, e
                continue
            try:
                if e.is_dir(follow_symlinks=False):
                    subdirs.append(e.path)
                    continue
            except OSError:
                continue
            yield top, e
        todo.extend(reversed(subdirs))


def is_sample_name(name):
    return name.endswith(".ckpt") or name.endswith(".ckpt.partial")


class Folders:
    """The samples in the dump folders, by rid; rescanned for new files as they land. A file
    that is not a readable sample is named once (through `report`) and skipped."""

    def __init__(self, dirs, report=say, tickets=False):
        self.dirs = dirs
        self.report = report
        # With the store sink: tickets are the samples; a .ckpt is one the sink has not moved
        # yet, or one it spilled (named at the end, never landed here).
        self.tickets = tickets
        self.files = set()
        self.ticketed = set()  # the names (less their suffix) of the samples tickets were seen for
        self.seen = set()
        self.by_rid = dict()  # rid -> [path, ...] in name order
        self.unreadable = dict()  # path -> why, named once
        self.no_rid = []  # complete samples without a rid (SGLang before 0.5.10)
        self.status = []  # the dump status files seen by the last scan

    def _bad(self, path, why):
        if self.unreadable.get(path) != why:
            self.unreadable[path] = why
            self.report("%s: skipped: %s" % (path, why))

    def scan(self):
        """New sample files since the last scan: [(rid, path)]."""
        new, status = [], []
        for _top, e in walk(self.dirs, self._bad):
            path = e.path
            if e.name.startswith("."):
                status.append(path)
                continue
            if path in self.seen:
                continue
            ticket = self.tickets and publish.is_ticket_name(e.name)
            if ticket:
                self.ticketed.add(e.name[: -len(publish.TICKET_SUFFIX)])
            if self.tickets and e.name.endswith(".ckpt"):
                self.files.add(path)
                continue
            if not ticket and not is_sample_name(e.name):
                continue
            try:
                mode = e.stat(follow_symlinks=False).st_mode
                if not stat.S_ISREG(mode):
                    self._bad(path, "%s, not a regular file; not read" % slm.what_it_is(mode))
                    continue
                rid = publish.read_ticket(path).get("rid") if ticket else slm.Sample(path).data.get("rid")
            except FileNotFoundError:
                continue  # gone between the listing and the read (a duplicate removed)
            except slm.MaskError as exc:
                self._bad(path, "not a sample: %s" % exc)
                continue
            except OSError as exc:
                self._bad(path, "cannot read it: %s" % (exc.strerror or exc))
                continue
            self.seen.add(path)
            self.unreadable.pop(path, None)
            if rid is None:
                if path.endswith(".ckpt"):
                    self.no_rid.append(path)
                if ticket:  # matched by its ids (SGLang before 0.5.10)
                    new.append((None, path))
                continue
            self.by_rid.setdefault(rid, []).append(path)
            new.append((rid, path))
        self.status = status
        return new

    def sink_spilled(self):
        """Samples the store sinks of the dump writers in the folders left as files (their status)."""
        total = 0
        for info in self._statuses():
            sink = info.get("sink")
            if isinstance(sink, dict) and is_int(sink.get("spilled")):
                total += sink["spilled"]
        return total

    def _statuses(self):
        for path in self.status:
            try:
                with slm_open(path) as f:
                    raw = f.read(MAX_STATUS + 1)
                info = load_json(raw) if len(raw) <= MAX_STATUS else None
            except (OSError, slm.MaskError, BadJSON):
                continue
            if isinstance(info, dict):
                yield info

    def idle(self):
        """True when every dump writer in the folders has written all it queued."""
        for info in self._statuses():
            queued, written, dropped = (info.get(k, 0) for k in ("queued", "written", "dropped"))
            if not all(is_int(v) for v in (queued, written, dropped)):
                continue
            if info.get("state") == "running" and queued > written + dropped:
                return False
            sink = info.get("sink")
            if isinstance(sink, dict) and is_int(sink.get("queued")) and sink["queued"] > 0:
                return False  # samples written, not yet in the store
        return True


def slm_open(path):
    """A binary reader of the regular file at `path`, not a link (MaskError otherwise)."""
    return os.fdopen(slm.open_regular(path), "rb")


def dump_statuses(dirs):
    """The status files of the dumps writing into `dirs` (their names; at most a few)."""
    found = []
    for top in dirs:
        for _root, _dirs, names in os.walk(top):
            found += sorted(n for n in names if n.startswith(".hs_dump_status_") and n.endswith(".json"))
            if len(found) >= 3:
                return found
    return found


# ---------------------------------------------------------------------------------------
# The record


HEX = re.compile(r"[0-9a-f]{64}\Z")


def entry_problem(entry):
    """Why a parsed record line is not an entry the sender wrote, or None. Events other than
    "sent" and "masked" are left to whoever wrote them."""
    if not isinstance(entry, dict) or not isinstance(entry.get("event"), str):
        raise BadJSON("not an object with an event")
    event = entry["event"]
    if event not in ("sent", "masked"):
        return None
    why = rid_problem(entry.get("rid"))
    if why is not None:
        return "its rid is %s" % why
    if event == "masked":
        return None
    tokens, mask = entry.get("tokens"), entry.get("mask")
    if not is_int(tokens) or not 1 <= tokens <= MAX_TOKENS:
        return '"tokens" is not a count of 1 to %d' % MAX_TOKENS
    if not isinstance(entry.get("ids_sha256"), str) or not HEX.match(entry["ids_sha256"]):
        return '"ids_sha256" is not a SHA-256 in hex'
    if not isinstance(mask, list) or len(mask) > tokens:
        return '"mask" is not a list of runs'
    last = 0
    for run in mask:
        if not (isinstance(run, list) and len(run) == 2 and is_int(run[0]) and is_int(run[1]) and last <= run[0] < run[1] <= tokens):
            return '"mask" holds a run that is not [start, end) in order within the tokens'
        last = run[1]
    line = entry.get("line")
    # a conversation's line number, or where a harvested request was (FILE#INDEX)
    if not (line is None or is_int(line) or isinstance(line, str) and len(line) <= 4 * MAX_RID):
        return '"line" is not a line number or a place in a request dump'
    return None


class Record:
    """Append-only JSONL: each line is written whole in one write, so a kill loses nothing said.

    One sender per job: the file is locked (flock, exclusive) for the whole run, and a second
    sender on it is Refused. It is never opened through a link or as anything but a regular
    file. A record whose last line was cut (a crash mid-write) gets the newline it lacks, so that
    the cut line stays one bad line and the next entry starts a line of its own. Each line that
    is not an entry the sender wrote is named (`report`) and skipped."""

    def __init__(self, path, report=say):
        self.path = path
        self.lock = threading.Lock()
        self.sent = dict()  # rid -> the "sent" entry
        self.masked = set()
        self.bad = 0  # lines named and skipped
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            seen = os.lstat(path)
        except FileNotFoundError:
            seen = None
        except OSError as exc:
            raise Refused("the record %s: %s" % (path, exc.strerror or exc)) from None
        if seen is not None and not stat.S_ISREG(seen.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(seen.st_mode) else "not a regular file"
            raise Refused("the record %s is %s: it is never written through" % (path, kind))
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
        try:
            self.fd = os.open(path, flags, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Refused("the record %s is a symbolic link: it is never written through" % path) from None
            raise Refused("the record %s: %s" % (path, exc.strerror or exc)) from None
        try:
            if not stat.S_ISREG(os.fstat(self.fd).st_mode):
                raise Refused("the record %s is not a regular file: it is never written through" % path)
            self._lock(path)
            self._read(report)
        except BaseException:
            os.close(self.fd)
            raise

    def _lock(self, path):
        try:
            import fcntl
        except ImportError:  # no flock here: one sender per job is the user's to keep
            return
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise Refused(
                    "the record %s is in use by another sglang-hs-send: one sender per job (wait for it to end, "
                    "or give this run a --record of its own)" % path
                ) from None
            raise Refused("the record %s cannot be locked: %s" % (path, exc.strerror or exc)) from None

    def _read(self, report):
        size = os.fstat(self.fd).st_size
        with os.fdopen(os.dup(self.fd), "rb") as f:
            f.seek(0)
            for number, raw in lines(f):
                if raw is None:
                    why = "a line of more than %d bytes" % MAX_LINE
                elif not raw.strip():
                    continue
                else:
                    try:
                        entry = load_json(raw)
                        why = entry_problem(entry)
                    except BadJSON as exc:
                        why = str(exc)
                    if why is None:
                        if entry["event"] == "sent":
                            self.sent[entry["rid"]] = entry
                        elif entry["event"] == "masked":
                            self.masked.add(entry["rid"])
                        continue
                    if not raw.endswith(b"\n"):
                        why = "cut short (a run stopped while writing it): %s" % why
                self.bad += 1
                report("%s:%d: record line skipped: %s" % (self.path, number, why))
        if size and os.pread(self.fd, 1, size - 1) != b"\n":
            self._append(b"\n")

    def _append(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]

    def write(self, **entry):
        entry["time"] = round(time.time(), 3)
        line = (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8")
        with self.lock:
            self._append(line)

    def close(self):
        """Flushes and closes the record (and so frees its lock); a second call does nothing."""
        with self.lock:
            if self.fd is None:
                return
            fd, self.fd = self.fd, None
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


# ---------------------------------------------------------------------------------------
# The server


class NotJSON(str):
    """An answer body that is not a JSON value (an HTML page, text), as text."""


class TooLarge(str):
    """An answer body over MAX_ANSWER bytes (not read further)."""


class CutAnswer(http.client.HTTPException):
    """An answer whose body ended before its declared length or last chunk: the connection closed
    mid-body. The server may have done the request (a 200 is sent once it is done)."""

    def __init__(self, status, why):
        super().__init__("HTTP %d, %s" % (status, why))
        self.status = status


class _DeadlineReader(io.RawIOBase):
    """The socket, read with what is left of the request's deadline as the timeout of each
    read: a server that sends one byte a second still ends the exchange at the deadline.

    `held` is the socket's file that http.client opened for the answer: it keeps the socket open
    (a reference, as sock.makefile counts them) until the answer is read, also where the
    connection closes itself at once (an answer with "connection: close"), and is closed with
    this reader."""

    def __init__(self, sock, deadline, held):
        self.sock, self.deadline, self.held = sock, deadline, held

    def readable(self):
        return True

    def readinto(self, buf):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("no whole answer within --timeout")
        self.sock.settimeout(left)
        return self.sock.recv_into(buf)

    def close(self):
        try:
            super().close()
        finally:
            self.held.close()


class Server:
    """The server's native API over HTTP/1.1 keep-alive connections, one per thread. Each
    exchange (connect, request, headers, body) ends at --timeout seconds from its start;
    answers over MAX_ANSWER bytes are not read."""

    def __init__(self, url, timeout):
        parts = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
        try:
            port = parts.port
        except ValueError:
            raise ValueError("%s: not a valid port" % url) from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("%s is not an http(s) URL" % url)
        if not timeout > 0:
            raise ValueError("--timeout must be more than 0 seconds")
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, port
        self.base = parts.path.rstrip("/")
        self.timeout = timeout
        self.local = threading.local()
        self.url = url

    def _connection(self, deadline):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            conn = cls(self.host, self.port, timeout=self.timeout)
            self.local.conn = conn
        box = self.local.deadline = [deadline]

        def response(sock, *args, **kwargs):
            resp = http.client.HTTPResponse(sock, *args, **kwargs)
            resp.fp = io.BufferedReader(_DeadlineReader(sock, box[0], resp.fp))
            return resp

        conn.response_class = response
        return conn

    def _drop(self):
        conn = getattr(self.local, "conn", None)
        self.local.conn = None
        if conn is not None:
            conn.close()

    def request(self, method, path, body=None):
        """(status, parsed JSON, or NotJSON / TooLarge text); OSError / HTTPException on a
        transport failure, socket.timeout when the exchange passes its deadline."""
        deadline = time.monotonic() + self.timeout
        conn = self._connection(deadline)
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        try:
            if conn.sock is None:
                conn.timeout = max(deadline - time.monotonic(), 0.001)
                conn.connect()
            conn.sock.settimeout(max(deadline - time.monotonic(), 0.001))
            conn.request(method, self.base + path, body=data, headers=headers)
            resp = conn.getresponse()
            chunks, size = [], 0
            try:
                while size <= MAX_ANSWER:
                    part = resp.read(MAX_ANSWER + 1 - size)
                    if not part:
                        break
                    chunks.append(part)
                    size += len(part)
            except http.client.IncompleteRead as exc:  # a chunked body cut before its last chunk
                raise CutAnswer(resp.status, "its body cut after %d bytes" % (size + len(exc.partial))) from None
            # read() gives b"" where the connection closed before Content-Length was reached
            if size <= MAX_ANSWER and resp.length:
                raise CutAnswer(resp.status, "its body cut after %d bytes, %d short of its length" % (size, resp.length))
        except socket.timeout:
            self._drop()
            raise socket.timeout("no whole answer within --timeout (%g s)" % self.timeout) from None
        except (OSError, http.client.HTTPException):
            self._drop()
            raise
        except ValueError as exc:  # a chunk size that is not a number, and the like
            self._drop()
            raise http.client.HTTPException("a damaged answer: %s" % exc) from None
        except BaseException:
            self._drop()
            raise
        raw = b"".join(chunks)
        if size > MAX_ANSWER:
            self._drop()
            return resp.status, TooLarge("an answer of more than %d bytes (not read further)" % MAX_ANSWER)
        if (resp.getheader("connection") or "").lower() == "close":
            self._drop()
        if not raw:
            return resp.status, None
        try:
            payload = load_json(raw)
        except BadJSON:
            payload = NotJSON(raw[:400].decode("utf-8", "replace"))
        return resp.status, payload


def error_text(payload):
    if isinstance(payload, dict):
        err = payload.get("error", payload)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail") or err
            return printable(msg if isinstance(msg, str) else json.dumps(msg))[:400]
        return printable(err if isinstance(err, str) else json.dumps(err))[:400]
    return printable(payload if isinstance(payload, str) else json.dumps(payload))[:400]


def answer_problem(rid, status, payload):
    """Why a 200 answer is not SGLang's answer to the request for `rid`, or None."""
    if isinstance(payload, TooLarge):
        return str(payload)
    if isinstance(payload, NotJSON):
        return "an answer that is not JSON (is --url the server or its router?): %s" % printable(payload[:200])
    if not isinstance(payload, dict) or not isinstance(payload.get("meta_info"), dict):
        return "an answer without SGLang's meta_info (is --url the server or its router?)"
    got = payload["meta_info"].get("id", rid)
    if got != rid:
        return "an answer for rid %s, not this one" % printable(str(got)[:100])
    return None


# ---------------------------------------------------------------------------------------
# Progress


class Progress:
    def __init__(self, mode, total, noun="conversations"):
        self.mode = mode if mode != "auto" else ("bar" if sys.stderr.isatty() else "lines")
        self.total, self.start, self.last, self.noun = total, time.monotonic(), 0.0, noun
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
        text = "%d/%d %s, %s tokens/s, ETA %s (%d sent, %d done before, %d skipped)" % (
            done,
            self.total,
            self.noun,
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
    def __init__(self, args, tokenizer, record):
        self.args, self.tokenizer = args, tokenizer
        self.progress = None
        self.folders = Folders(args.dump_dir, self.say, tickets=args.publish is not None) if args.dump_dir else None
        self.record = record
        self.stats = dict(done=0, skipped=0, failed=0, tokens=0, on_disk=0, answered=0, masked=0, partial=0, duplicates=0,
                          published=0, published_before=0, spilled=0)
        # --publish: SpecForge's channel; `halt` stops a publisher waiting on the trainer
        # (an interrupt, a refusal), `ended` says why the trainer stopped taking samples.
        self.publisher, self.halt, self.ended = None, threading.Event(), None
        self.broken = set()  # tickets whose objects are not all in the store
        if args.publish is not None and not args.dry_run:
            expect = publish.Expect()
            if args.draft_config:
                expect.aux_ids, expect.hidden = publish.expected_from_draft(args.draft_config)
            versions = dict(target=args.target_model_version, tokenizer=os.path.basename(os.path.normpath(args.tokenizer or "")) or "unknown")
            self.publisher = publish.Publisher(args.publish, expect, versions, args.high_watermark, report=self.say)
        self.lock = threading.Lock()
        self.pending = dict()  # rid -> (digest, mask runs, tokens, line): sent, sample not landed yet
        self.complete = dict()  # rid -> path of its complete sample
        self.stop = threading.Event()
        self.problems = []
        self.progress = None
        self.reasons, self.read, self.bad_dumps = dict(), 0, []  # request dumps: skipped by reason
        # Until a sample of a conversation sent lands in the dump folders, each is sent alone
        # (first_sample): a server that dumps elsewhere stops the run at the first one.
        self.unproven = self.folders is not None and not args.dry_run
        self.fatal = None

    def say(self, text):
        if self.progress is not None and self.progress.mode == "bar":
            sys.stderr.write("\r\x1b[K")
        say(text)

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
        if self.publisher is not None and publish.is_ticket_name(os.path.basename(path)):
            return self.land_ticket(rid, path)
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

    def land_ticket(self, rid, path):
        """A ticket of the server's store sink appeared: announce its sample with its mask (rid
        None: matched by its ids), or remove a duplicate's objects and ticket."""
        if self.halt.is_set():
            return
        try:
            ticket = publish.read_ticket(path)
        except FileNotFoundError:
            return
        ids = ticket["input_ids"]
        digest = ids_digest(ids)
        with self.lock:
            if rid is None:  # no rid in the sample (SGLang before 0.5.10): its ids say whose it is
                rid = next((r for r, w in self.pending.items() if w[0] == digest and w[2] == len(ids)), None)
                if rid is None:
                    rid = next((r for r, e in self.record.sent.items() if e.get("ids_sha256") == digest), None)
            want = self.pending.get(rid) if rid is not None else None
            if want is None and rid is not None:
                entry = self.record.sent.get(rid)
                if entry is not None:
                    want = (entry["ids_sha256"], entry["mask"], entry["tokens"], entry.get("line"))
        if ticket["sample_id"] in self.publisher.done:  # announced, its ticket left by a run that stopped
            if rid is not None:
                with self.lock:
                    self.complete[rid] = path
                    self.pending.pop(rid, None)
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            return
        if want is None:
            return  # not ours (another job shares the folder)
        want_digest, spans, tokens, _line = want
        if len(ids) != tokens or digest != want_digest:
            self.say("%s: rid %s holds other tokens than were sent (%d, sent %d); not published" % (path, rid, len(ids), tokens))
            return
        with self.lock:
            kept = self.complete.get(rid)
            duplicate = (kept is not None and kept != path) or rid in self.publisher.rids
            if not duplicate:
                self.complete[rid] = path
        if duplicate:  # the same request processed twice: one sample is published
            for o in ticket["objects"].values():
                self.publisher.store.remove(o["key"])
            os.unlink(path)
            with self.lock:
                self.stats["duplicates"] += 1
            self.say("%s: removed with its store objects, a second sample of rid %s" % (path, rid))
            return
        try:
            self.publisher.publish(ticket, unruns(spans, tokens), rid, digest, self.halt)
        except slm.MaskError as exc:  # its objects are not all in the store: never announced
            with self.lock:
                self.complete.pop(rid, None)
                first = path not in self.broken
                self.broken.add(path)
            if first:
                self.problem(path, rid, "not announced: %s" % exc)
            return
        except publish.Stop as exc:
            self.ended = str(exc)
            self.halt.set()
            self.stop.set()
            return
        except publish.Refused as exc:
            self.fatal = str(exc)
            self.halt.set()
            self.stop.set()
            return
        with self.lock:
            self.pending.pop(rid, None)
            self.stats["published"] += 1
        self.record.write(event="published", rid=rid, sample=ticket["sample_id"])
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

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
                if self.publisher is not None and not self.halt.is_set():
                    self.land_spilled()  # every ticket seen by now
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
                ticket = publish.is_ticket_name(os.path.basename(path))
                ids = publish.read_ticket(path)["input_ids"] if ticket else slm.Sample(path).input_ids()
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
        rid, ids = job["rid"], job["ids"]
        body = dict(input_ids=ids, rid=rid, sampling_params=dict(max_new_tokens=1, temperature=0.0), stream=False)
        delay = 0.5
        for attempt in range(self.args.retries + 1):
            if self.stop.is_set() and attempt:
                return None
            try:
                status, payload = server.request("POST", "/generate", body)
            except CutAnswer as exc:
                # Not an answer: the request may have been done, and its sample dumped. If it
                # lands, it is masked and the conversation counted sent; if not, it is sent
                # again with the same rid (a second sample of it would be removed on landing).
                if exc.status == 200 and self.landed_after_cut(rid):
                    return dict(meta_info=dict(id=rid))
                status, payload = None, "an answer cut mid-body (%s)" % exc
            except (OSError, http.client.HTTPException) as exc:
                status, payload = None, "%s: %s" % (type(exc).__name__, exc)
            if status == 200:
                why = answer_problem(rid, status, payload)
                if why is not None:
                    raise Skip("the server answered HTTP 200 with %s; not counted as sent" % why)
                return payload
            if status is not None and status not in RETRY_STATUS:
                raise Skip("the server refused it (HTTP %d): %s" % (status, error_text(payload)))
            if attempt < self.args.retries:
                time.sleep(delay)
                delay = min(delay * 2, 30.0)
        raise Skip("no answer after %d tries: %s" % (self.args.retries + 1, error_text(payload)))

    def landed_after_cut(self, rid):
        """After a 200 whose body was cut: wait for the sample of `rid` (the server answers once
        the prefill is done, the dump writes the sample soon after) until the lander has masked
        it, or the dump folders are idle without it (at most FIRST_SAMPLE_WAIT, or
        --land-timeout if shorter). True when it landed; False without a dump folder."""
        if self.folders is None:
            return False
        start, idle_since = time.monotonic(), None
        limit = min(self.args.land_timeout, FIRST_SAMPLE_WAIT)
        while not self.stop.is_set():
            now = time.monotonic()
            with self.lock:
                if rid in self.complete:
                    return True
                idle = now - start >= 1.0 and self.folders.idle()
            if idle and idle_since is None:
                idle_since = now
            if (idle_since is not None and now - idle_since >= 0.5) or now - start >= limit:
                break  # idle for two scans of the lander, or waited long enough
            time.sleep(0.1)
        with self.lock:
            return rid in self.complete

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
        if is_int(prompt) and prompt != len(ids):
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
        self.progress = Progress(args.progress, total, noun(args))
        server = Server(args.url, args.timeout) if not args.dry_run else None
        if self.folders is not None:
            found = self.folders.scan()
            if self.publisher is not None:  # tickets of an earlier run's conversations first
                for rid, path in found:
                    if publish.is_ticket_name(os.path.basename(path)):
                        try:
                            self.land(rid, path)
                        except Exception as exc:
                            self.say("%s: not announced: %s" % (path, exc))
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
                if self.publisher is not None and rid in self.publisher.rids:
                    with self.lock:  # announced already: by an earlier run (the channel says so), or now
                        self.stats["published_before"] += rid in self.publisher.rids_before
                        self.stats["skipped"] += 1
                    self.progress.show(self.stats)
                    continue
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
                job = dict(line=line, rid=rid, ids=ids, digest=digest, mask=spans)
                if isinstance(messages, Harvested):
                    job["source"] = messages.source
                if self.unproven and self.first_sample(server, job):
                    continue
                # --publish: the server runs at most a few batches ahead of the trainer
                while self.publisher is not None and not self.stop.is_set():
                    with self.lock:
                        if len(self.pending) <= max(4 * args.concurrency, 16):
                            break
                    time.sleep(0.05)
                while not self.stop.is_set():
                    try:
                        jobs.put(job, timeout=0.2)
                        break
                    except queue.Full:
                        continue
        except KeyboardInterrupt:
            interrupted = True
            self.stop.set()
            self.halt.set()
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
            self.halt.set()
        self.stop.set()
        try:
            if watcher is not None:
                while watcher.is_alive():
                    watcher.join(0.2)
        except KeyboardInterrupt:
            interrupted = True
            self.halt.set()
            watcher.join()
        if self.publisher is not None:
            self.finish_publishing(interrupted)
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
            done, seen, files = self.stats["done"], len(folders.seen), len(folders.files)
        self.deliver(server, job)
        with self.lock:
            if self.stats["done"] == done:
                return True  # refused or not answered, and named: the next one checks
        start = time.monotonic()
        while not self.stop.is_set():
            with self.lock:
                # (with the store sink, a sample file is one it spilled or has not moved yet)
                landed = bool(folders.by_rid.get(rid)) or rid in self.complete or len(folders.files) > files
                others = len(folders.seen) - seen
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
            with self.lock:  # (a ticket landed and waiting on the trainer is not missing)
                left = sum(1 for rid in self.pending if rid not in self.complete)
            if not left or self.halt.is_set():
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
        what = noun(self.args)  # conversations, or requests of the request dumps
        parts = ["%d %s sent (%d tokens)" % (s["done"], what, s["tokens"])]
        if self.args.dry_run:
            parts = ["dry run: %d %s would be sent (%d tokens)" % (s["done"], what, s["tokens"])]
        if self.folders is not None:
            parts.append("%d already complete on disk" % s["on_disk"])
        else:
            parts.append("%d answered in an earlier run (the record)" % s["answered"])
        if self.publisher is not None:
            parts.append("%d published to %s (%d in an earlier run)" % (s["published"], self.publisher.channel.path, s["published_before"]))
        elif self.folders is not None and not self.args.dry_run:
            parts.append("%d loss masks set" % s["masked"])
        if s["failed"]:
            parts.append("%d skipped (named above)" % s["failed"])
        if s["duplicates"]:
            parts.append("%d duplicate samples removed" % s["duplicates"])
        out("; ".join(parts))
        if self.publisher is not None:
            spilled = self.folders.sink_spilled()
            if spilled or s["spilled"]:
                out("the server's store sink left %d samples in the dump folders as ordinary sample files (its "
                    "overflow rule: the store or its queue was full, or a put failed; the server's log says which); "
                    "%d of this run's, not announced, got their loss masks there" % (spilled, s["spilled"]))
            if self.ended:
                out("the trainer stopped taking samples: %s" % self.ended)
        if self.args.request_dumps:
            out(harvest_counts(self))
        if missing and not interrupted:
            # a conversation's line number, or a harvested request's FILE#INDEX
            shown = ", ".join("%s (%s)" % (rid, want[3] if isinstance(want[3], str) else "line %s" % want[3]) for rid, want in missing[:10])
            out(
                "%d sent %s have no complete sample in %s: %s%s; is SGLANG_HS_DUMP_DIR that folder? "
                "Rerun the same command to send them again" % (
                    len(missing),
                    what,
                    ", ".join(self.args.dump_dir),
                    shown,
                    ", ..." if len(missing) > 10 else "",
                ),
            )
        if interrupted:
            left = self.progress.total - (s["done"] + s["skipped"] + s["failed"])
            out("interrupted with %d %s left; rerun the same command to go on (the record is %s)" % (left, what, self.args.record))
            return 130
        if self.ended and self.ended != "the trainer is done" or s["spilled"]:
            return 1
        return 1 if s["failed"] or (missing and not self.ended) else 0

    def land_spilled(self):
        """Once the dump is idle: samples of this run that the server's store sink left in the
        folder (its overflow rule: files without a ticket, ever) get their masks there, as the
        folder route gives them. (With ?keep=files a stored sample's file stays too: its ticket
        was seen, or the channel names it.)"""
        if not self.folders.idle():
            return
        with self.lock:
            left = set(rid for rid in self.pending if rid not in self.complete)
        for path in sorted(self.folders.files):
            stem = os.path.basename(path)[: -len(".ckpt")]
            if stem in self.folders.ticketed or stem in self.publisher.done:
                continue
            try:
                rid = slm.Sample(path).data.get("rid")
            except (OSError, slm.MaskError):
                continue
            if rid in left:
                self.land(rid, path)
                with self.lock:
                    if rid not in self.pending:
                        self.stats["spilled"] += 1

    def finish_publishing(self, interrupted):
        """The channel's verdict, then the wait for the trainer (the loss masks live in this
        sender's store segment unless a segment host keeps them)."""
        if self.ended is not None and not self.fatal:
            return  # the trainer ended the run: nothing to close
        failure = self.fatal or ("the sender was interrupted" if interrupted else None)
        self.say("%s; waiting for the trainer to end (Ctrl-C stops waiting)" % (
            "wrote %s.failed" % self.publisher.channel.path if failure else "all published: wrote %s.closed" % self.publisher.channel.path))
        waiter = threading.Event()
        try:
            ended, left = self.publisher.finish(failure, waiter, self.args.consumer_wait)
        except KeyboardInterrupt:
            return
        if ended is not None and self.ended is None:
            self.ended = ended


def noun(args):
    """What the run sends, in its messages: conversations, or requests (--request-dumps)."""
    return "requests" if args.request_dumps else "conversations"


def out(text):
    """One line of the summary on stdout, printable."""
    print("%s: %s" % (PROG, printable(text)), flush=True)


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
    """Set the masks of the samples in the folders from the record alone. Every complete sample
    whose mask is not set is named (its rid not in the record, other tokens, unreadable), and
    the exit status is then 1."""
    record = Record(args.record)
    folders = Folders(args.dump_dir)
    done = wrong = removed = 0
    unset = []  # (path, why)
    by_rid = dict()
    for rid, path in folders.scan():
        by_rid.setdefault(rid, []).append(path)
    for rid in sorted(by_rid):
        paths = [p for p in by_rid[rid] if p.endswith(".ckpt")]
        entry = record.sent.get(rid)
        if entry is None:
            unset += [(p, "rid %s is not in the record %s" % (rid, args.record)) for p in paths]
            continue
        kept = None
        for path in paths:
            try:
                sample = slm.Sample(path)
                ids = sample.input_ids()
                if len(ids) != entry["tokens"] or ids_digest(ids) != entry["ids_sha256"]:
                    unset.append((path, "rid %s holds other tokens than were sent; left as it is" % rid))
                    wrong += 1
                    continue
                if kept is not None:
                    os.unlink(path)
                    removed += 1
                    say("%s: removed, a second sample of rid %s (kept %s)" % (path, rid, kept))
                    continue
                mask = unruns(entry["mask"], entry["tokens"])
                if sample.mask() != mask:
                    sample.write_mask(mask)
            except FileNotFoundError:
                continue
            except (slm.MaskError, OSError) as exc:
                unset.append((path, str(exc)))
                continue
            kept = path
            done += 1
    unset += [(p, "the sample has no rid (SGLang before 0.5.10 does not pass it)") for p in folders.no_rid]
    unset += [(p, why) for p, why in folders.unreadable.items() if p.endswith(".ckpt")]
    for path, why in unset:
        say("%s: loss_mask not set: %s" % (path, why))
    missing = [rid for rid in record.sent if not any(p.endswith(".ckpt") for p in by_rid.get(rid, ()))]
    out(
        "%d loss masks set from %s; %d samples without their mask (named above); %d with other tokens; "
        "%d duplicates removed; %d sent conversations without a complete sample; %d record lines skipped"
        % (done, args.record, len(unset), wrong, removed, len(missing), record.bad)
    )
    record.close()
    return 1 if unset or missing or record.bad else 0


def parse(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--conversations", help="JSONL: one conversation per line")
    p.add_argument("--request-dumps", nargs="+", metavar="DIR", help="instead of --conversations: the *.pkl request dumps of production SGLang servers (their /configure_logging dump_requests_folder) under these folders")
    p.add_argument("--tokenizer", help="the model's tokenizer: a local folder (or a hub name)")
    p.add_argument("--chat-template", help="a Jinja chat template file, instead of the tokenizer's")
    p.add_argument("--trust-remote-code", action="store_true", help="run the tokenizer's own code (an auto_map class, e.g. tiktoken-based)")
    p.add_argument("--url", default="http://127.0.0.1:30000", help="the server, or the router in front of several (default %(default)s)")
    p.add_argument("--dump-dir", action="append", default=[], help="where the samples land (SGLANG_HS_DUMP_DIR; a folder of node folders is scanned too); repeatable")
    p.add_argument("--record", help="the record of what was sent (default: DUMP_DIR/%s)" % RECORD_NAME)
    p.add_argument("--concurrency", type=int, default=16, help="requests at once (default %(default)s)")
    p.add_argument("--retries", type=int, default=5, help="tries after a transient failure (default %(default)s)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for one whole exchange with the server: connect, send, answer (default %(default)s)")
    p.add_argument("--context-length", type=int, help="skip conversations of this many tokens or more")
    p.add_argument("--land-timeout", type=float, default=600.0, help="seconds to wait for samples that do not land (default %(default)s)")
    p.add_argument("--land-grace", type=float, default=10.0, help="seconds to wait once the dump is idle (default %(default)s)")
    p.add_argument("--progress", choices=("auto", "bar", "lines", "none"), default="auto")
    p.add_argument("--python", help="the interpreter to run in (default python3; read by the command itself)")
    p.add_argument("--dry-run", action="store_true", help="render and check every conversation, send nothing")
    p.add_argument("--masks-only", action="store_true", help="set the masks in --dump-dir from the record; send nothing")
    o = p.add_argument_group("SpecForge's online trainer through a Mooncake store (--publish)")
    o.add_argument("--publish", metavar="CONTROL", help="announce the samples the server's store sink put (SGLANG_HS_DUMP_SINK=mooncake://RUN) in CONTROL/refs.jsonl, the trainer's channel; the store from MOONCAKE_MASTER_SERVER_ADDR and MOONCAKE_METADATA_SERVER")
    o.add_argument("--high-watermark", type=int, default=256, help="samples announced and not yet trained on, at most, and at least the trainer's quantum (default %(default)s, SpecForge's own; the trainer's count of what it trained on lags by a few batches)")
    o.add_argument("--draft-config", help="the draft model's config (JSON): its aux layer ids and target width are checked against each sample's (default: SpecForge's default ids)")
    o.add_argument("--target-model-version", default="unknown", help="written in each SampleRef (default %(default)s)")
    o.add_argument("--consumer-wait", type=float, help="seconds to wait for the trainer to end after the last sample (default: until it ends; the store objects of this sender live as long as it does)")
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
            p.error("--record FILE is needed without --dump-dir (a dry run too: it locks the record as a run does, writing nothing)")
        args.record = os.path.join(args.dump_dir[0], RECORD_NAME)
    if args.masks_only:
        if not args.dump_dir:
            p.error("--masks-only needs --dump-dir")
        return args
    if args.publish is not None and not args.dump_dir:
        p.error("--publish needs --dump-dir: the folder the server's sink leaves its tickets in")
    if args.high_watermark < 0:
        p.error("--high-watermark must be 0 or more")
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
    try:
        Server(args.url, args.timeout)
    except ValueError as exc:
        p.error(printable(exc))
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
            say("made %s (private, as the dump makes it); the server must dump there" % d)


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
    # request dumps with token ids and no --tokenizer render nothing: no transformers needed
    why = (missing_packages() if args.tokenizer else None) or (None if args.dry_run else server_down(args.url))
    if why:
        print("%s: %s" % (PROG, why), file=sys.stderr)
        return 2
    return 0


def main(argv=None):
    # Text from files and servers is printed escaped; a locale that cannot write a character
    # of it gets an escape too, never an error.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = parse(argv)
    try:
        if args.masks_only:
            return masks_only(args)
        if not args.request_dumps:
            open_input(args.conversations).close()
        if preflight(args):
            return 2
        # The record (and its lock) first: a second sender on the same job is refused at once,
        # not after loading a tokenizer. Nothing is printed yet, so its lines go out as they are.
        record = Record(args.record)
        try:
            # request dumps need the tokenizer only for requests that came as text
            tokenizer = load_tokenizer(args) if args.tokenizer else None
            if tokenizer is None and args.tokenizer:
                return 2
            make_dump_dirs(args)
            try:
                run = Run(args, tokenizer, record)
            except ValueError as exc:
                say(str(exc))
                return 2
            return run.run()
        finally:
            record.close()
    except (Refused, publish.Refused) as exc:
        say(str(exc))
        return 2


def _terminate(_signum, _frame):
    raise KeyboardInterrupt()


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the requests in flight are answered, the record flushed.
    signal.signal(signal.SIGTERM, _terminate)
    sys.exit(main())
