#!/usr/bin/env python3
"""Give dumped hidden-state samples SpecForge's loss mask: 1 on assistant tokens only.

The sglang-hs-dump recipe writes `loss_mask` as all ones: the server sees a prompt, not
who said what. This script takes the conversations you sent (one JSON object per line,
each with the explicit `rid` you gave the request), renders each with the model's chat
template, checks that the tokens equal the sample's `input_ids`, and rewrites the
sample's `loss_mask` in place:

    python3 scripts/specforge_loss_mask.py --conversations sent.jsonl \\
        --tokenizer deepseek-ai/DeepSeek-V3 /dev/shm/sglang_hs

A conversation line: {"rid": "conv-17", "messages": [{"role": "user", "content": ...},
{"role": "assistant", "content": ...}, ...]} (ShareGPT's "conversations" with
"from"/"value" is read too; "tools" is passed to the template).

The mask is 1 on the tokens of each assistant turn's text after the template's assistant
header, up to and including the template's end-of-turn text (ChatML's `<|im_end|>` and the
newline after it, as SpecForge's own templates say);
0 elsewhere (system, user, tool turns, headers, BOS). This is the rule SpecForge applies
when it builds its own training data.

Files: every `*.ckpt` under the given folders (or the given files; `.ckpt.partial` only
with --include-partial, and their mask then covers only the tokens in the file, which
must be a suffix of the conversation). Each file is rewritten atomically: a copy with the
new mask (same size, same layout, zip CRCs updated) is synced and renamed over the
original. A file whose ids do not match its conversation, or whose rid is unknown, is
left untouched and reported; the exit status is then 1.

Needs the `transformers` and `jinja2` packages for the tokenizer and its chat template; not
PyTorch: the files are read and patched as the zip archives torch.save writes. Any tokenizer
kind works: fast ones give token offsets, Python classes (slow ones, remote-code ones such as
tiktoken-based classes) get the same mask from prefix token counts; a tokenizer that ships its
own code runs only with --trust-remote-code.
"""

import argparse
import errno
import json
import os
import socket
import stat
import struct
import sys
import zlib
from collections import OrderedDict

# ---------------------------------------------------------------------------------------
# Conversations and the mask


class MaskError(Exception):
    """A sample that cannot get a mask: unknown rid, ids that differ, a bad template."""


class TokenizerError(Exception):
    """A tokenizer that cannot be loaded, said in one line."""


REMOTE_CODE_FLAG = "--trust-remote-code"


def one_line(text):
    """The first non-empty line of `text`, control characters escaped, at most 300 characters."""
    line = next((t.strip() for t in str(text).splitlines() if t.strip()), "")
    line = "".join(c if c.isprintable() else "\\x%02x" % ord(c) if ord(c) < 256 else "\\u%04x" % ord(c) for c in line)
    return line[:300] + ("..." if len(line) > 300 else "")


def load_tokenizer(name, trust_remote_code=False, chat_template=None):
    """The tokenizer `name` (a folder or a hub id) through transformers' AutoTokenizer, with
    `chat_template` (a file) in place of its own when given. Code shipped with the tokenizer
    (an `auto_map` class, e.g. a tiktoken-based one) runs only with `trust_remote_code`, as
    transformers and SGLang ask; TokenizerError otherwise, naming the flag."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=trust_remote_code)
    except Exception as exc:  # transformers' own errors: OSError, ValueError, ImportError, ...
        if not trust_remote_code and "trust_remote_code" in str(exc):
            raise TokenizerError(
                "%s: the tokenizer ships its own code (a tokenizer class of its own); "
                "pass %s to run it (only for a tokenizer you trust)" % (one_line(name), REMOTE_CODE_FLAG)
            ) from None
        raise TokenizerError("%s: cannot load the tokenizer: %s" % (one_line(name), one_line(exc) or type(exc).__name__)) from None
    if chat_template:
        try:
            with open(chat_template, encoding="utf-8") as f:
                tokenizer.chat_template = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise TokenizerError("%s: cannot read the chat template: %s" % (one_line(chat_template), one_line(exc))) from None
    return tokenizer


def read_conversations(path):
    """rid -> (messages, tools) from a JSONL file."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise MaskError("%s:%d: not JSON: %s" % (path, number, exc)) from None
            rid = item.get("rid")
            if not isinstance(rid, str) or not rid:
                raise MaskError("%s:%d: no \"rid\" (send each request with an explicit rid)" % (path, number))
            if rid in out:
                raise MaskError("%s:%d: rid %r appears twice" % (path, number, rid))
            messages = item.get("messages")
            if messages is None and "conversations" in item:
                roles = dict(human="user", user="user", gpt="assistant", assistant="assistant", system="system")
                messages = [
                    dict(role=roles.get(m.get("from"), m.get("from")), content=m.get("value"))
                    for m in item["conversations"]
                ]
            if not isinstance(messages, list) or not messages:
                raise MaskError("%s:%d: no \"messages\" list" % (path, number))
            out[rid] = (messages, item.get("tools"))
    return out


def _render(tokenizer, messages, tools, generation_prompt):
    kwargs = dict(tokenize=False, add_generation_prompt=generation_prompt)
    if tools:
        kwargs["tools"] = tools
    return tokenizer.apply_chat_template(messages, **kwargs)


def assistant_spans(tokenizer, messages, tools=None):
    """The rendered conversation and the character spans of its assistant turns.

    A turn's span starts where the template's text for the conversation up to the turn
    (with the generation prompt, which ends with the assistant header) ends, and stops
    where the text including the turn ends (its end-of-turn text included, as SpecForge's templates
    end a turn: `<|im_end|>\n` for ChatML). The template must
    render each shorter conversation as a prefix of the longer one."""
    text = _render(tokenizer, messages, tools, False)
    spans = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        before = _render(tokenizer, messages[:i], tools, True) if i else ""
        upto = _render(tokenizer, messages[: i + 1], tools, False)
        if not (upto.startswith(before) and text.startswith(upto)):
            raise MaskError(
                "the chat template does not render turn %d as a continuation of the turns before it "
                "(templates that rewrite earlier turns, e.g. drop reasoning, are not supported)" % i
            )
        end = len(upto)
        if end > len(before):
            spans.append((len(before), end))
    return text, spans


def tokens_and_mask(tokenizer, text, spans, add_special_tokens=False):
    """(ids, mask) of `text`: a token is 1 when its first character lies in one of `spans`.

    Where the tokenizer gives character offsets (the "fast" ones) they say where each token
    starts. Python tokenizer classes (slow ones, remote-code classes such as tiktoken-based
    ones) give none: there the text before each span boundary is tokenized on its own, as
    SpecForge's preprocessing counts tokens, which gives the same mask (a token that crosses a
    boundary counts for the side its first character is on)."""
    try:
        enc = tokenizer(text, add_special_tokens=add_special_tokens, return_offsets_mapping=True)
    except (NotImplementedError, TypeError):  # older transformers refuse offsets for Python classes
        enc = None
    if enc is not None and enc.get("offset_mapping") is not None:
        ids = [int(i) for i in enc["input_ids"]]
        mask = [1 if end > start and any(a <= start < b for a, b in spans) else 0 for start, end in enc["offset_mapping"]]
        return ids, mask
    return _mask_by_prefixes(tokenizer, text, spans, add_special_tokens)


def _encode(tokenizer, text, special=False):
    return [int(i) for i in tokenizer(text, add_special_tokens=special)["input_ids"]]


def _mask_by_prefixes(tokenizer, text, spans, add_special_tokens):
    plain = _encode(tokenizer, text)
    lead, ids = 0, plain
    if add_special_tokens:  # the tokens the tokenizer adds (BOS, EOS) are never supervised
        ids = _encode(tokenizer, text, True)
        lead = next((k for k in range(len(ids) - len(plain) + 1) if ids[k : k + len(plain)] == plain), None)
        if lead is None:
            raise MaskError("the tokenizer's special tokens change the text's other tokens; cannot place the mask")
    mask = [0] * len(ids)
    for a, b in spans:
        start, end = _tokens_before(tokenizer, text, plain, a), _tokens_before(tokenizer, text, plain, b)
        mask[lead + start : lead + end] = [1] * (end - start)
    return ids, mask


def _tokens_before(tokenizer, text, plain, p):
    """How many of the text's tokens (`plain`) start before character `p`."""
    if p <= 0:
        return 0
    if p >= len(text):
        return len(plain)
    head = _encode(tokenizer, text[:p])
    if plain[: len(head)] == head:
        return len(head)
    # A token of the whole text crosses p: the first token after the common prefix starts
    # before p; find the shortest run of tokens whose text covers text[:p].
    k = 0
    while k < min(len(head), len(plain)) and head[k] == plain[k]:
        k += 1
    want = text[:p]
    for j in range(k + 1, len(plain) + 1):
        shown = tokenizer.decode(plain[:j], skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if len(shown) >= p and shown.startswith(want):
            return j
    raise MaskError("cannot map the tokens to the turn boundary at character %d (the tokenizer gives no offsets and its decoded text differs)" % p)


def loss_mask(tokenizer, messages, ids, tools=None):
    """The mask for a sample whose token ids are `ids`, or MaskError when the conversation
    does not tokenize to exactly those ids (with or without the tokenizer's special tokens)."""
    text, spans = assistant_spans(tokenizer, messages, tools)
    ids = list(ids)
    tried = []
    for special in (False, True):
        got = _encode(tokenizer, text, special)
        tried.append(got)
        if got == ids:
            return tokens_and_mask(tokenizer, text, spans, special)[1]
    got = min(tried, key=lambda t: abs(len(t) - len(ids)))
    at = next((k for k, (a, b) in enumerate(zip(got, ids)) if a != b), min(len(got), len(ids)))
    raise MaskError(
        "the conversation's tokens differ from the sample's input_ids: %d tokens against %d, first "
        "difference at position %d (was it sent with this chat template and tokenizer?)" % (len(got), len(ids), at)
    )


# ---------------------------------------------------------------------------------------
# Samples as torch.save writes them: a zip (stored, not compressed) holding data.pkl and
# one entry per storage. A sample is read within fixed bounds before anything in it is used,
# as a hostile file could be: a regular file only, never opened in a way that blocks; the zip's
# end record and central directory bounded; every entry stored (a deflated one, a zip bomb, is
# refused unread); a data.pkl of at most 1 MiB read by a small pickle machine that imports and
# calls nothing; a rid of at most 512 bytes; input_ids and loss_mask flat int64 tensors whose
# entries hold exactly their declared elements (a sample declaring 2**36 ids is refused by its
# declared size, before anything is allocated).

MAX_ENTRIES = 1024  # zip entries (the dump writes about ten)
MAX_CENTRAL = 1 << 20  # bytes of the zip's central directory
MAX_PICKLE = 1 << 20  # bytes of data.pkl (the dump's is a few KB)
MAX_OPS = 1 << 16  # pickle instructions
MAX_NODES = 1 << 16  # values in data.pkl, counted as printing it would (shared ones each time)
MAX_DEPTH = 32  # containers nested in data.pkl
MAX_RID = 512  # bytes of a rid (UTF-8)
MAX_TOKENS = 1 << 24  # ids of one sample (16,777,216: no context is longer)


class TensorRef:
    """A tensor in a sample: its storage entry, element type and layout."""

    def __init__(self, storage, offset, size, stride):
        self.key, self.dtype, self.numel = storage
        self.offset, self.size, self.stride = int(offset), tuple(size), tuple(stride)


_DTYPES = dict(
    DoubleStorage=8, FloatStorage=4, HalfStorage=2, BFloat16Storage=2, LongStorage=8, IntStorage=4,
    ShortStorage=2, CharStorage=1, ByteStorage=1, BoolStorage=1, ComplexDoubleStorage=16, ComplexFloatStorage=8,
)
_REBUILD = ("torch._utils", "_rebuild_tensor_v2")
_ORDERED_DICT = ("collections", "OrderedDict")


def open_regular(path):
    """A read-only descriptor of the regular file at `path`; MaskError for anything else (a
    link, FIFO, device, socket, folder), which is never opened in a way that waits or reads:
    opened non-blocking without following a link, its type checked on the handle."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise MaskError("%s, not a regular file; not read" % _kind(st.st_mode))
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MaskError("a symbolic link, not a regular file; not read") from None
        raise MaskError("cannot open it: %s" % (exc.strerror or exc)) from None
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode):
        os.close(fd)
        raise MaskError("%s, not a regular file; not read" % _kind(opened.st_mode))
    return fd


def _kind(mode):
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def _pread(fd, size, at):
    data = os.pread(fd, size, at)
    if len(data) != size:
        raise MaskError("the file ends inside its zip structure (truncated?)")
    return data


_EOCD = struct.Struct("<4sHHHHIIH")
_ZIP64_LOCATOR = struct.Struct("<4sIQI")
_ZIP64_EOCD = struct.Struct("<4sQHHIIQQQQ")
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
_LOCAL = struct.Struct("<4sHHHHHIIIHH")


class _Entry:
    """One zip entry: its name, local header offset, size, CRC and central record offset."""

    def __init__(self, name, header, size, crc, central):
        self.filename, self.header_offset, self.file_size, self.crc, self.central = name, header, size, crc, central


class _Archive:
    """The entries of a torch.save archive, checked: one folder prefix, no duplicate names,
    nothing compressed or encrypted, every entry inside the file."""

    def __init__(self, fd):
        self.fd = fd
        size = os.fstat(fd).st_size
        if size < _EOCD.size or _pread(fd, 4, 0) != b"PK\x03\x04":
            raise MaskError("not a torch.save archive (a zip)")
        tail_len = min(size, _EOCD.size + 0xFFFF)
        tail = _pread(fd, tail_len, size - tail_len)
        at = tail.rfind(b"PK\x05\x06")
        while at >= 0 and not (at + _EOCD.size <= tail_len and at + _EOCD.size + _EOCD.unpack_from(tail, at)[7] == tail_len):
            at = tail.rfind(b"PK\x05\x06", 0, at)
        if at < 0:
            raise MaskError("no zip end record: not a whole torch.save archive (truncated?)")
        end = size - tail_len + at
        _sig, disk, cd_disk, n_disk, count, cd_size, cd_at, _comment = _EOCD.unpack_from(tail, at)
        if 0xFFFF in (count, n_disk) or 0xFFFFFFFF in (cd_size, cd_at):  # ZIP64
            if end < _ZIP64_LOCATOR.size:
                raise MaskError("a ZIP64 archive without its locator")
            sig, _d, z64_at, _n = _ZIP64_LOCATOR.unpack(_pread(fd, _ZIP64_LOCATOR.size, end - _ZIP64_LOCATOR.size))
            if sig != b"PK\x06\x07" or z64_at + _ZIP64_EOCD.size > end - _ZIP64_LOCATOR.size:
                raise MaskError("a ZIP64 archive whose locator is damaged")
            fields = _ZIP64_EOCD.unpack(_pread(fd, _ZIP64_EOCD.size, z64_at))
            if fields[0] != b"PK\x06\x06":
                raise MaskError("a ZIP64 archive whose end record is damaged")
            disk, cd_disk, n_disk, count, cd_size, cd_at = fields[4:10]
            end = z64_at
        if disk or cd_disk or n_disk != count:
            raise MaskError("a zip archive spanning several disks")
        if count > MAX_ENTRIES or cd_size > MAX_CENTRAL:
            raise MaskError("%d zip entries in %d bytes, more than a sample has" % (count, cd_size))
        if cd_at + cd_size > end:
            raise MaskError("the zip central directory lies outside the file")
        self.data_end = cd_at
        self.entries = dict()
        cd = _pread(fd, cd_size, cd_at)
        p = 0
        for _ in range(count):
            if p + _CENTRAL.size > len(cd):
                raise MaskError("the zip central directory ends inside an entry")
            fields = _CENTRAL.unpack_from(cd, p)
            sig, flags, method, crc, csize, usize, n_name, n_extra, n_comment, header = (
                fields[0], fields[3], fields[4], fields[7], fields[8], fields[9], fields[10], fields[11], fields[12], fields[16])
            if sig != b"PK\x01\x02":
                raise MaskError("a damaged zip central directory")
            raw = cd[p + _CENTRAL.size:p + _CENTRAL.size + n_name]
            extra = cd[p + _CENTRAL.size + n_name:p + _CENTRAL.size + n_name + n_extra]
            central = cd_at + p
            p += _CENTRAL.size + n_name + n_extra + n_comment
            if p > len(cd):
                raise MaskError("the zip central directory ends inside an entry")
            usize, csize, header = _zip64_values(extra, usize, csize, header)
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise MaskError("a zip entry whose name is not UTF-8") from None
            if name in self.entries:
                raise MaskError("two zip entries of one name")
            if flags & 1 or method != 0 or csize != usize:
                raise MaskError("a compressed or encrypted zip entry (torch.save stores every entry as it is)")
            if header + _LOCAL.size + usize > cd_at:
                raise MaskError("a zip entry lies outside the file's data")
            self.entries[name] = _Entry(name, header, usize, crc, central)
        first = next(iter(self.entries), "")
        self.prefix = first.split("/", 1)[0] + "/"
        if not all(n.startswith(self.prefix) for n in self.entries):
            raise MaskError("zip entries in more than one folder: not a torch.save archive")

    def entry(self, name):
        e = self.entries.get(self.prefix + name)
        if e is None:
            raise MaskError("no %s in the archive: not a torch.save archive" % name)
        return e

    def data_at(self, e):
        """Where the entry's bytes start, from its local header (whose name must be the same)."""
        fields = _LOCAL.unpack(_pread(self.fd, _LOCAL.size, e.header_offset))
        n_name, n_extra = fields[9], fields[10]
        if fields[0] != b"PK\x03\x04" or _pread(self.fd, n_name, e.header_offset + _LOCAL.size) != e.filename.encode("utf-8"):
            raise MaskError("a zip entry with a damaged local header")
        start = e.header_offset + _LOCAL.size + n_name + n_extra
        if start + e.file_size > self.data_end:
            raise MaskError("a zip entry lies outside the file's data")
        return start

    def read(self, name, limit):
        e = self.entry(name)
        if e.file_size > limit:
            raise MaskError("%s is %d bytes, more than the %d a sample's may be" % (name, e.file_size, limit))
        data = _pread(self.fd, e.file_size, self.data_at(e))
        if zlib.crc32(data) & 0xFFFFFFFF != e.crc:
            raise MaskError("%s does not match its CRC (damaged)" % name)
        return data


def _zip64_values(extra, usize, csize, header):
    """The sizes and offset a ZIP64 extra field holds in place of 0xFFFFFFFF."""
    wanted = [v == 0xFFFFFFFF for v in (usize, csize, header)]
    if not any(wanted):
        return usize, csize, header
    at = 0
    while at + 4 <= len(extra):
        kind, n = struct.unpack_from("<HH", extra, at)
        if kind == 1:
            field, values, i = extra[at + 4:at + 4 + n], [usize, csize, header], 0
            for k in range(3):
                if wanted[k]:
                    if i + 8 > len(field):
                        raise MaskError("a damaged ZIP64 extra field")
                    (values[k],) = struct.unpack_from("<Q", field, i)
                    i += 8
            return tuple(values)
        at += 4 + n
    raise MaskError("a zip entry without the ZIP64 field its sizes need")


class _Global:
    """A name data.pkl refers to: a storage class, the tensor rebuilder or OrderedDict."""

    def __init__(self, module, name):
        self.module, self.name = module, name


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _rebuild(args):
    """torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata])."""
    if not isinstance(args, tuple) or len(args) not in (6, 7):
        raise MaskError("a tensor record of an unknown shape")
    storage, offset, size, stride = args[:4]
    ok = isinstance(storage, tuple) and _is_int(offset) and offset >= 0
    for dims in (size, stride):
        ok = ok and isinstance(dims, tuple) and len(dims) <= 16 and all(_is_int(d) and d >= 0 for d in dims)
    if not ok or len(size) != len(stride):
        raise MaskError("a tensor record that torch.save does not write")
    return TensorRef(storage, offset, size, stride)


def unpickle(data):
    """The value data.pkl holds, built from the instructions torch.save's pickler writes for
    plain values and tensors (protocol 2, and the plain-value instructions of 3 and 4), within
    the bounds above; MaskError for anything else. Nothing is imported or called."""
    stack, marks, memo = [], [], dict()
    pos, end, ops = 0, len(data), 0

    def take(n):
        nonlocal pos
        if n < 0 or pos + n > end:
            raise MaskError("data.pkl ends inside an instruction")
        pos += n
        return data[pos - n:pos]

    def pop():
        if not stack or (marks and len(stack) <= marks[-1]):
            raise MaskError("data.pkl uses a value it has not pushed")
        return stack.pop()

    def top():
        if not stack:
            raise MaskError("data.pkl uses a value it has not pushed")
        return stack[-1]

    def since_mark():
        if not marks:
            raise MaskError("data.pkl closes a mark it has not opened")
        at = marks.pop()
        items = stack[at:]
        del stack[at:]
        return items

    def text(raw):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MaskError("data.pkl holds a string that is not UTF-8") from None

    def put(key, value):
        d = top()
        if not isinstance(d, dict) or not (isinstance(key, str) or _is_int(key)):
            raise MaskError("data.pkl sets an item torch.save does not write")
        d[key] = value

    while True:
        ops += 1
        if ops > MAX_OPS:
            raise MaskError("data.pkl has more than %d instructions" % MAX_OPS)
        op = take(1)
        if op == b"\x80":  # PROTO
            if take(1)[0] > 5 or ops != 1:
                raise MaskError("data.pkl is not a pickle torch.save writes")
        elif op == b"\x95":  # FRAME
            take(8)
        elif op == b"(":
            marks.append(len(stack))
        elif op == b"}":
            stack.append(dict())
        elif op == b"]":
            stack.append([])
        elif op == b")":
            stack.append(())
        elif op == b"t":
            stack.append(tuple(since_mark()))
        elif op in (b"\x85", b"\x86", b"\x87"):  # TUPLE1..3
            items = [pop() for _ in range(op[0] - 0x84)]
            stack.append(tuple(reversed(items)))
        elif op in (b"a", b"e"):  # APPEND, APPENDS
            items = [pop()] if op == b"a" else since_mark()
            if not isinstance(top(), list):
                raise MaskError("data.pkl appends to something that is not a list")
            top().extend(items)
        elif op == b"s":
            value = pop()
            put(pop(), value)
        elif op == b"u":
            items = since_mark()
            if len(items) % 2:
                raise MaskError("data.pkl sets a key without a value")
            for i in range(0, len(items), 2):
                put(items[i], items[i + 1])
        elif op in (b"q", b"r", b"\x94"):  # BINPUT, LONG_BINPUT, MEMOIZE
            key = take(1)[0] if op == b"q" else struct.unpack("<I", take(4))[0] if op == b"r" else len(memo)
            memo[key] = top()
        elif op in (b"h", b"j"):  # BINGET, LONG_BINGET
            key = take(1)[0] if op == b"h" else struct.unpack("<I", take(4))[0]
            if key not in memo:
                raise MaskError("data.pkl refers to a value it has not stored")
            stack.append(memo[key])
        elif op == b"J":
            stack.append(struct.unpack("<i", take(4))[0])
        elif op == b"K":
            stack.append(take(1)[0])
        elif op == b"M":
            stack.append(struct.unpack("<H", take(2))[0])
        elif op in (b"\x8a", b"\x8b"):  # LONG1, LONG4
            n = take(1)[0] if op == b"\x8a" else struct.unpack("<i", take(4))[0]
            if not 0 <= n <= 8:
                raise MaskError("data.pkl holds an integer of more than 64 bits")
            stack.append(int.from_bytes(take(n), "little", signed=True))
        elif op == b"G":
            stack.append(struct.unpack(">d", take(8))[0])
        elif op == b"X":
            stack.append(text(take(struct.unpack("<I", take(4))[0])))
        elif op == b"\x8c":
            stack.append(text(take(take(1)[0])))
        elif op == b"N":
            stack.append(None)
        elif op in (b"\x88", b"\x89"):
            stack.append(op == b"\x88")
        elif op in (b"c", b"\x93"):  # GLOBAL, STACK_GLOBAL
            if op == b"c":
                names = []
                for _ in range(2):
                    nl = data.find(b"\n", pos, pos + 201)
                    if nl < 0:
                        raise MaskError("data.pkl names an object without ending the name")
                    names.append(text(data[pos:nl]))
                    pos = nl + 1
                module, name = names
            else:
                name, module = pop(), pop()
                if not (isinstance(module, str) and isinstance(name, str)):
                    raise MaskError("data.pkl names an object with something that is not a string")
            if (module, name) not in (_REBUILD, _ORDERED_DICT) and not (module == "torch" and name in _DTYPES):
                raise MaskError("unexpected object %s.%s in the sample" % (module[:60], name[:60]))
            stack.append(_Global(module, name))
        elif op == b"Q":  # BINPERSID
            pid = pop()
            if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _Global)
                    and pid[1].module == "torch" and isinstance(pid[2], str) and len(pid[2]) <= 64
                    and isinstance(pid[3], str) and _is_int(pid[4]) and pid[4] >= 0):
                raise MaskError("data.pkl refers to a storage in a form torch.save does not write")
            stack.append((pid[2], pid[1].name, pid[4]))
        elif op == b"R":  # REDUCE
            args = pop()
            fn = pop()
            if isinstance(fn, _Global) and (fn.module, fn.name) == _REBUILD:
                stack.append(_rebuild(args))
            elif isinstance(fn, _Global) and (fn.module, fn.name) == _ORDERED_DICT and args == ():
                stack.append(OrderedDict())
            else:
                raise MaskError("data.pkl calls something other than torch.save's tensor rebuilder")
        elif op == b".":  # STOP
            value = pop()
            _check_tree(value)
            return value
        else:
            raise MaskError("data.pkl uses pickle instruction 0x%02x, which torch.save does not write" % op[0])


def _check_tree(root):
    """Refuse a value that contains itself, nests more than MAX_DEPTH deep, or would be more
    than MAX_NODES values once written out (a shared reference counts each time it is reached:
    `a = [a, a]` sixty times over is small in data.pkl and 2**60 values in str())."""
    done = dict()  # id -> (values, depth)
    path = set()
    todo = [(root, False)]
    while todo:
        obj, closing = todo.pop()
        if not isinstance(obj, (list, tuple, dict)):
            continue
        me = id(obj)
        items = list(obj.keys()) + list(obj.values()) if isinstance(obj, dict) else obj
        if closing:
            path.discard(me)
            nodes, depth = 1, 0
            for item in items:
                n, d = done.get(id(item), (1, 0)) if isinstance(item, (list, tuple, dict)) else (1, 0)
                nodes, depth = nodes + n, max(depth, d)
            if nodes > MAX_NODES:
                raise MaskError("data.pkl holds a value that expands to more than %d values (shared references)" % MAX_NODES)
            if depth + 1 > MAX_DEPTH:
                raise MaskError("data.pkl nests values more than %d levels deep" % MAX_DEPTH)
            done[me] = (nodes, depth + 1)
            continue
        if me in done:
            continue
        if me in path:
            raise MaskError("data.pkl holds a value that contains itself")
        path.add(me)
        todo.append((obj, True))
        for item in items:
            if isinstance(item, (list, tuple, dict)) and id(item) not in done:
                todo.append((item, False))


class Sample:
    """A dumped sample opened for reading its ids and patching its loss mask."""

    def __init__(self, path):
        self.path = path
        fd = open_regular(path)
        try:
            archive = _Archive(fd)
            order = archive.entries.get(archive.prefix + "byteorder")
            if order is not None and archive.read("byteorder", 16).strip() != b"little":
                raise MaskError("big-endian archive")
            self.data = unpickle(archive.read("data.pkl", MAX_PICKLE))
            self.prefix = archive.prefix
            self.infos = archive.entries
            if not isinstance(self.data, dict):
                raise MaskError("the sample is not a dict")
            for key in ("input_ids", "loss_mask"):
                ref = self.data.get(key)
                if not isinstance(ref, TensorRef) or ref.dtype != "LongStorage" or len(ref.size) != 1 or (ref.stride != (1,) and ref.size[0] > 1):
                    raise MaskError("%s is not a 1-d int64 tensor" % key)
                if ref.size[0] > MAX_TOKENS or ref.offset + ref.size[0] > ref.numel:
                    raise MaskError("%s declares %d ids, more than its storage or the %d a sample may have" % (key, ref.size[0], MAX_TOKENS))
                if archive.entry("data/" + ref.key).file_size != ref.numel * 8:
                    raise MaskError("%s: its storage entry does not hold the %d elements it declares" % (key, ref.numel))
            if self.data["input_ids"].size != self.data["loss_mask"].size:
                raise MaskError("input_ids and loss_mask differ in length")
            rid = self.data.get("rid")
            if rid is not None and not (isinstance(rid, str) and 0 < len(rid.encode("utf-8", "surrogatepass")) <= MAX_RID):
                raise MaskError("its rid is not a string of 1 to %d bytes" % MAX_RID)
            prefix = self.data.get("prefix_len")
            if prefix is not None and not (_is_int(prefix) and 0 <= prefix <= MAX_TOKENS):
                raise MaskError("its prefix_len is not a count of tokens")
        finally:
            os.close(fd)

    def _entry(self, ref):
        info = self.infos.get(self.prefix + "data/" + ref.key)
        if info is None:
            raise MaskError("storage %s missing" % ref.key)
        return info

    def _read(self, ref):
        fd = open_regular(self.path)
        try:
            archive = _Archive(fd)
            info = archive.entry("data/" + ref.key)
            if info.file_size != ref.numel * 8:
                raise MaskError("the file changed while it was read")
            raw = _pread(fd, ref.size[0] * 8, archive.data_at(info) + ref.offset * 8) if ref.size[0] else b""
        finally:
            os.close(fd)
        return list(struct.unpack("<%dq" % ref.size[0], raw))

    def input_ids(self):
        return self._read(self.data["input_ids"])

    def mask(self):
        return self._read(self.data["loss_mask"])

    def write_mask(self, mask):
        """Replace loss_mask's values, atomically: patch a synced copy, then rename it."""
        ref = self.data["loss_mask"]
        if len(mask) != ref.size[0]:
            raise MaskError("mask of %d for %d tokens" % (len(mask), ref.size[0]))
        folder, base = os.path.split(os.path.abspath(self.path))
        _remove_stale_mask_temporaries(folder, base)
        # A name of this process's own: a writer killed mid-copy leaves its temporary behind.
        host = socket.gethostname().replace("/", "_")
        tmp = os.path.join(folder, ".%s.mask.%d.%s.%s.tmp" % (base, os.getpid(), os.urandom(4).hex(), host))
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        src = open_regular(self.path)
        try:
            fd = os.open(tmp, flags, 0o600)
        except BaseException:
            os.close(src)
            raise
        try:
            os.fchmod(fd, os.fstat(src).st_mode & 0o777)
            at = 0
            while True:
                block = os.pread(src, 1 << 24, at)
                if not block:
                    break
                view = memoryview(block)
                while view:
                    n = os.pwrite(fd, view, at)
                    at, view = at + n, view[n:]
            # the copy's own layout: what is patched is what was copied
            archive = _Archive(fd)
            info = archive.entry("data/" + ref.key)
            if info.file_size != ref.numel * 8:
                raise MaskError("the file changed while it was read")
            start = archive.data_at(info)
            entry = bytearray(_pread(fd, info.file_size, start))
            off = ref.offset * 8
            entry[off:off + 8 * len(mask)] = struct.pack("<%dq" % len(mask), *mask)
            os.pwrite(fd, bytes(entry), start)
            crc_value = zlib.crc32(entry) & 0xFFFFFFFF
            crc = struct.pack("<I", crc_value)
            os.pwrite(fd, crc, info.header_offset + 14)
            os.pwrite(fd, crc, info.central + 16)
            os.fsync(fd)
            # read back: the entry and its CRC agree in the copy
            check = _Archive(fd).entry("data/" + ref.key)
            if zlib.crc32(_pread(fd, check.file_size, start)) & 0xFFFFFFFF != crc_value or check.crc != crc_value:
                raise MaskError("the patched copy does not read back")
            os.replace(tmp, self.path)
            tmp = None
            dfd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        finally:
            os.close(fd)
            os.close(src)
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def _remove_stale_mask_temporaries(folder, base):
    """Remove the mask temporaries of `base` left by writers of this machine that are gone
    (killed between the copy and the rename); a live writer's, or another host's (a shared
    folder), stays."""
    prefix = "." + base + ".mask."
    suffix = "." + socket.gethostname().replace("/", "_") + ".tmp"
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix) and n.endswith(suffix)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix) :].split(".")[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # that process is alive (or not ours to signal): leave its file
        except ProcessLookupError:
            pass
        except OSError:
            continue
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass


# ---------------------------------------------------------------------------------------
# Command line


def sample_paths(args, partial):
    out = []
    for arg in args:
        if os.path.isdir(arg):
            for root, _dirs, names in os.walk(arg):
                out += [
                    os.path.join(root, n)
                    for n in names
                    if n.endswith(".ckpt") or (partial and n.endswith(".ckpt.partial"))
                ]
        else:
            out.append(arg)
    return sorted(out)


def mask_file(path, conversations, tokenizer, dry_run=False):
    """Rewrite one file's mask; returns (supervised tokens, tokens). MaskError leaves it as is."""
    sample = Sample(path)
    rid = sample.data.get("rid")
    if rid is None:
        raise MaskError("the sample has no rid (SGLang before 0.5.10 does not pass it)")
    if rid not in conversations:
        raise MaskError("rid %r is not in the conversations" % rid)
    messages, tools = conversations[rid]
    ids = sample.input_ids()
    prefix = sample.data.get("prefix_len") or 0
    if prefix:
        # a partial sample holds the tokens after its prefix: mask the whole conversation
        # and keep the part in the file, after checking the conversation is that long
        text, _ = assistant_spans(tokenizer, messages, tools)
        full = list(tokenizer(text, add_special_tokens=False)["input_ids"])
        if full[prefix : prefix + len(ids)] != ids:
            full = list(tokenizer(text, add_special_tokens=True)["input_ids"])
        if full[prefix : prefix + len(ids)] != ids:
            raise MaskError("the sample's ids are not the conversation's tokens from position %d" % prefix)
        mask = loss_mask(tokenizer, messages, full, tools)[prefix : prefix + len(ids)]
    else:
        mask = loss_mask(tokenizer, messages, ids, tools)
    if not dry_run:
        sample.write_mask(mask)
    return sum(mask), len(mask)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", required=True, help="JSONL: one {rid, messages} per request sent")
    parser.add_argument("--tokenizer", required=True, help="the model's tokenizer (path or hub name)")
    parser.add_argument("--chat-template", help="a Jinja chat template file, instead of the tokenizer's")
    parser.add_argument(
        "--trust-remote-code", action="store_true", help="run the tokenizer's own code (an auto_map class, e.g. tiktoken-based)"
    )
    parser.add_argument("--include-partial", action="store_true", help="also *.ckpt.partial files")
    parser.add_argument("--dry-run", action="store_true", help="check and count, write nothing")
    parser.add_argument("paths", nargs="+", help="dump folders or sample files")
    args = parser.parse_args(argv)

    try:
        import jinja2  # noqa: F401  (transformers renders chat templates with it)

        tokenizer = load_tokenizer(args.tokenizer, args.trust_remote_code, args.chat_template)
    except ImportError as exc:
        print("error: needs the transformers and jinja2 packages (%s): %s -m pip install transformers jinja2" % (one_line(exc), sys.executable), file=sys.stderr)
        return 2
    except TokenizerError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2
    return run(args, tokenizer)


def run(args, tokenizer):
    """The command with a tokenizer already built (tests pass their own)."""
    try:
        conversations = read_conversations(args.conversations)
    except (OSError, MaskError) as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2
    done = failed = supervised = tokens = 0
    for path in sample_paths(args.paths, args.include_partial):
        try:
            s, n = mask_file(path, conversations, tokenizer, args.dry_run)
        except (MaskError, OSError) as exc:
            failed += 1
            print("%s: left unchanged: %s" % (path, exc), file=sys.stderr)
            continue
        done += 1
        supervised += s
        tokens += n
    verb = "would set" if args.dry_run else "set"
    print("%s loss_mask in %d files (%d of %d tokens supervised); %d files failed" % (verb, done, supervised, tokens, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
