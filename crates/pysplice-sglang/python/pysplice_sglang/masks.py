#!/usr/bin/env python3
"""Give dumped hidden-state samples SpecForge's loss mask: 1 on assistant tokens only.

The sglang-hs-dump recipe writes `loss_mask` as all ones: the server sees a prompt, not
who said what. This script takes the conversations you sent (one JSON object per line,
each with the explicit `rid` you gave the request), renders each with the model's chat
template, checks that the tokens equal the sample's `input_ids`, and rewrites the
sample's `loss_mask` in place:

    python3 crates/pysplice-sglang/python/pysplice_sglang/masks.py --conversations sent.jsonl \\
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

# ---------------------------------------------------------------------------------------
# Conversations and the mask


class SampleError(Exception):
    """Why a file is not a sample the reader reads, or cannot get a mask; `kind` says which
    check refused it (the sample reader below raises the subclasses)."""

    kind = "sample"


# The name this script and sglang-hs-send catch: every refusal, the reader's included.
MaskError = SampleError


class TokenizerError(Exception):
    """A tokenizer that cannot be loaded, said in one line."""


REMOTE_CODE_FLAG = "--trust-remote-code"


# The one printable form of text from outside (a file name, a key, a rid, a message) in what
# the Python programs print: the Rust programs' (pysplice::report::printable and shown), case
# for case (crates/pysplice-sglang/tests/it/printable.rs runs both on the same text).

BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escaped(c):
    """The escape of one character that is not printed as it is, or None."""
    o = ord(c)
    if c == "\n":
        return "\\n"
    if c == "\r":
        return "\\r"
    if c == "\t":
        return "\\t"
    if o < 0x20 or 0x7F <= o < 0xA0:  # Unicode's control characters (Cc)
        return "\\x%02x" % o
    if 0xDC80 <= o <= 0xDCFF:  # a byte of a file name that is not UTF-8 (surrogateescape)
        return "\\x%02x" % (o - 0xDC00)
    if c in BIDI or 0xD800 <= o < 0xE000:
        return "\\u{%x}" % o
    return None


def printable(text):
    """`text` safe to print on a terminal: control characters (line breaks and tabs as `\\n`,
    `\\r`, `\\t`, the others as `\\xNN`) and the bidirectional formatting characters (`\\u{202e}`)
    escaped, and each byte of a name that is not UTF-8 as `\\xNN`; anything else as it is."""
    text = str(text)
    if text.isprintable() and not BIDI.intersection(text):
        return text
    return "".join(_escaped(c) or c for c in text)


def shown(text, limit=80):
    """`text` inside a message: printable, cut after `limit` characters with `...` and the full
    length in bytes, so that a name from outside can neither fill the screen nor drive it."""
    text = str(text)
    if len(text) <= limit:
        return printable(text)
    # A byte of a name that is not UTF-8 counts as one byte; any other lone surrogate as UTF-8 would
    # write it: never an error, whatever the text.
    size = sum(1 if 0xDC80 <= ord(c) <= 0xDCFF else len(c.encode("utf-8", "surrogatepass")) for c in text)
    return "%s... (%d bytes)" % (printable(text[:limit]), size)


def one_line(text, limit=300):
    """The first non-empty line of `text` (an exception's message), [shown]."""
    return shown(next((t.strip() for t in str(text).splitlines() if t.strip()), ""), limit)


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
# calls nothing; every tensor inside its storage, every storage's entry holding exactly its
# declared elements. This reader is also sglang-hs-inspect's (its inspector.py imports this
# file, which that program embeds); the mask's own checks (a rid of at most 512 bytes;
# input_ids and loss_mask flat int64 tensors, a sample declaring 2**36 ids refused by its
# declared size before anything is allocated) are in Sample.

MAX_ENTRIES = 1024  # zip entries (the dump writes about ten)
MAX_CENTRAL = 1 << 20  # bytes of the zip's central directory
MAX_PICKLE = 1 << 20  # bytes of data.pkl (the dump's is a few KB)
MAX_OPS = 1 << 16  # pickle instructions
MAX_NODES = 1 << 16  # values in data.pkl, counted as printing it would (shared ones each time)
MAX_DEPTH = 32  # containers nested in data.pkl
MAX_DIMS = 16  # dimensions of a tensor
MAX_RID = 512  # bytes of a rid (UTF-8)
MAX_TOKENS = 1 << 24  # ids of one sample (16,777,216: no context is longer)

# torch.save's storage classes: (dtype name as torch prints it, bytes per element)
STORAGES = dict(
    DoubleStorage=("float64", 8), FloatStorage=("float32", 4), HalfStorage=("float16", 2),
    BFloat16Storage=("bfloat16", 2), LongStorage=("int64", 8), IntStorage=("int32", 4),
    ShortStorage=("int16", 2), CharStorage=("int8", 1), ByteStorage=("uint8", 1),
    BoolStorage=("bool", 1), ComplexDoubleStorage=("complex128", 16), ComplexFloatStorage=("complex64", 8),
)
REBUILD = ("torch._utils", "_rebuild_tensor_v2")
ORDERED_DICT = ("collections", "OrderedDict")


class NotAFile(SampleError):
    """Not a regular file (a link where links are not followed, a FIFO, a device, a folder), or
    one that cannot be opened."""

    kind = "not-a-file"


class ArchiveError(SampleError):
    """Not torch.save's zip layout, or one outside the bounds (compressed, too large, damaged)."""

    kind = "archive"


class PickleError(SampleError):
    """data.pkl holds what torch.save does not write for a sample, or more than the bounds."""

    kind = "pickle"


class TensorError(SampleError):
    """A tensor or storage that does not fit the file."""

    kind = "tensor"




def quoted(key):
    """A key from a file, for a message: in quotes, [shown] and cut at 60 characters."""
    return '"%s"' % shown(key, 60) if isinstance(key, str) else shown(repr(key), 60)


# Files: regular files only, looked at before they are opened for reading.

KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def what_it_is(mode):
    """What a file of `mode` is, for a message: "a FIFO", "a symbolic link", ..."""
    for test, name in KINDS:
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path, follow_links=False):
    """A read-only descriptor of the regular file at `path` (a link only with `follow_links`).
    Anything else is named in a NotAFile without having been opened for reading: on Linux the
    path is opened with O_PATH (which opens no device and waits on no FIFO), its type checked
    on that handle, and the same file reopened through /proc/self/fd; elsewhere it is opened
    non-blocking and checked on the handle. A file that is not there: FileNotFoundError."""
    nofollow = 0 if follow_links else getattr(os, "O_NOFOLLOW", 0)
    cloexec = getattr(os, "O_CLOEXEC", 0)
    flags = os.O_RDONLY | cloexec | getattr(os, "O_NOCTTY", 0)
    try:
        o_path = getattr(os, "O_PATH", 0)
        if o_path and os.path.isdir("/proc/self/fd"):
            probe = os.open(path, o_path | nofollow | cloexec)
            try:
                seen = os.fstat(probe)
                if not stat.S_ISREG(seen.st_mode):
                    raise NotAFile("%s, not a regular file; not read" % what_it_is(seen.st_mode))
                fd = os.open("/proc/self/fd/%d" % probe, flags)
            finally:
                os.close(probe)
        else:
            fd = os.open(path, flags | nofollow | getattr(os, "O_NONBLOCK", 0))
            seen = None
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (seen and (seen.st_dev, seen.st_ino) != (opened.st_dev, opened.st_ino)):
            os.close(fd)
            raise NotAFile("%s, not a regular file; not read" % what_it_is(opened.st_mode))
        return fd
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise NotAFile("a symbolic link, not a regular file; not read") from None
        raise NotAFile("cannot open it: %s" % (exc.strerror or exc)) from None


def pread(fd, size, at):
    data = os.pread(fd, size, at)
    if len(data) != size:
        raise ArchiveError("the file ends inside its zip structure (truncated?)")
    return data


# ---------------------------------------------------------------------------------------
# torch.save's zip layout, read with bounds: <name>/data.pkl, <name>/data/<key> per storage,
# a few small records; every entry stored, not compressed.

EOCD = struct.Struct("<4sHHHHIIH")
ZIP64_LOCATOR = struct.Struct("<4sIQI")
ZIP64_EOCD = struct.Struct("<4sQHHIIQQQQ")
CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
LOCAL = struct.Struct("<4sHHHHHIIIHH")


class Entry:
    """One zip entry: its name, where its local header is, its size, CRC and central record."""

    __slots__ = ("name", "header", "size", "crc", "central")

    def __init__(self, name, header, size, crc, central):
        self.name, self.header, self.size, self.crc, self.central = name, header, size, crc, central


class Archive:
    """The entries of a torch.save archive, checked: one folder prefix, no duplicate, nothing
    compressed or encrypted, every entry inside the file."""

    def __init__(self, fd, size=None):
        size = os.fstat(fd).st_size if size is None else size
        self.fd, self.file_size = fd, size
        if size < EOCD.size or pread(fd, 4, 0) != b"PK\x03\x04":
            raise ArchiveError("not a zip archive (torch.save's format; the legacy format is not read)")
        # the end record is the last 22 bytes unless the archive has a comment (torch.save
        # writes none); else it is within the last 64 KiB
        tail_len = EOCD.size
        tail = pread(fd, tail_len, size - tail_len)
        if tail[:4] != b"PK\x05\x06" or EOCD.unpack(tail)[7]:
            tail_len = min(size, EOCD.size + 0xFFFF)
            tail = pread(fd, tail_len, size - tail_len)
        at = tail.rfind(b"PK\x05\x06")
        while at >= 0 and not (at + EOCD.size <= tail_len and at + EOCD.size + EOCD.unpack_from(tail, at)[7] == tail_len):
            at = tail.rfind(b"PK\x05\x06", 0, at)
        if at < 0:
            raise ArchiveError("no end of central directory: not a whole zip archive (truncated?)")
        end = size - tail_len + at
        _sig, disk, cd_disk, n_disk, count, cd_size, cd_at, _comment = EOCD.unpack_from(tail, at)
        if 0xFFFF in (count, n_disk) or 0xFFFFFFFF in (cd_size, cd_at):  # ZIP64
            if end < ZIP64_LOCATOR.size:
                raise ArchiveError("a ZIP64 archive without its locator")
            sig, _disk, z64_at, _disks = ZIP64_LOCATOR.unpack(pread(fd, ZIP64_LOCATOR.size, end - ZIP64_LOCATOR.size))
            if sig != b"PK\x06\x07" or z64_at + ZIP64_EOCD.size > end - ZIP64_LOCATOR.size:
                raise ArchiveError("a ZIP64 archive whose locator is damaged")
            fields = ZIP64_EOCD.unpack(pread(fd, ZIP64_EOCD.size, z64_at))
            if fields[0] != b"PK\x06\x06":
                raise ArchiveError("a ZIP64 archive whose end record is damaged")
            disk, cd_disk, n_disk, count, cd_size, cd_at = fields[4:10]
            end = z64_at
        if disk or cd_disk or n_disk != count:
            raise ArchiveError("a zip archive spanning several disks")
        if count > MAX_ENTRIES:
            raise ArchiveError("%d zip entries, more than the %d a sample may have" % (count, MAX_ENTRIES))
        if cd_size > MAX_CENTRAL:
            raise ArchiveError("a zip central directory of %d bytes, more than %d" % (cd_size, MAX_CENTRAL))
        if cd_at + cd_size > end:
            raise ArchiveError("the zip central directory lies outside the file")
        self.data_end = cd_at
        self.entries = dict()
        cd = pread(fd, cd_size, cd_at)
        p = 0
        for _ in range(count):
            if p + CENTRAL.size > len(cd):
                raise ArchiveError("the zip central directory ends inside an entry")
            (sig, _made, _need, flags, method, _time, _date, crc, csize, usize, n_name, n_extra, n_comment,
             _disk, _int, _ext, header) = CENTRAL.unpack_from(cd, p)
            if sig != b"PK\x01\x02":
                raise ArchiveError("a damaged zip central directory")
            raw = cd[p + CENTRAL.size:p + CENTRAL.size + n_name]
            extra = cd[p + CENTRAL.size + n_name:p + CENTRAL.size + n_name + n_extra]
            central = cd_at + p
            p += CENTRAL.size + n_name + n_extra + n_comment
            if p > len(cd):
                raise ArchiveError("the zip central directory ends inside an entry")
            usize, csize, header = zip64_values(extra, usize, csize, header)
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ArchiveError("a zip entry whose name is not UTF-8") from None
            if name in self.entries:
                raise ArchiveError("two zip entries named %s" % quoted(name))
            if flags & 1:
                raise ArchiveError("zip entry %s is encrypted" % quoted(name))
            if method != 0 or csize != usize:
                raise ArchiveError("zip entry %s is compressed (torch.save stores every entry as it is)" % quoted(name))
            if header + LOCAL.size + usize > cd_at:
                raise ArchiveError("zip entry %s lies outside the file's data" % quoted(name))
            self.entries[name] = Entry(name, header, usize, crc, central)
        if p != len(cd):
            raise ArchiveError("the zip central directory holds more than its entries")
        first = next(iter(self.entries), "")
        self.prefix = first.split("/", 1)[0] + "/"
        if not all(n.startswith(self.prefix) for n in self.entries):
            raise ArchiveError("zip entries in more than one folder: not a torch.save archive")

    def entry(self, name):
        e = self.entries.get(self.prefix + name)
        if e is None:
            raise ArchiveError("no %s in the archive: not a torch.save archive" % name)
        return e

    def data_at(self, e):
        """Where the entry's bytes start, from its local header (whose name must be the same)."""
        fields = LOCAL.unpack(pread(self.fd, LOCAL.size, e.header))
        n_name, n_extra = fields[9], fields[10]
        if fields[0] != b"PK\x03\x04" or pread(self.fd, n_name, e.header + LOCAL.size) != e.name.encode("utf-8"):
            raise ArchiveError("zip entry %s has a damaged local header" % quoted(e.name))
        start = e.header + LOCAL.size + n_name + n_extra
        if start + e.size > self.data_end:
            raise ArchiveError("zip entry %s lies outside the file's data" % quoted(e.name))
        return start

    def read(self, name, limit):
        e = self.entry(name)
        if e.size > limit:
            raise ArchiveError("%s is %d bytes, more than the %d a sample's may be" % (name, e.size, limit))
        data = pread(self.fd, e.size, self.data_at(e))
        if zlib.crc32(data) & 0xFFFFFFFF != e.crc:
            raise ArchiveError("%s does not match its CRC (damaged)" % name)
        return data


def zip64_values(extra, usize, csize, header):
    """The sizes and offset a ZIP64 extra field holds in place of 0xFFFFFFFF."""
    wanted = [v == 0xFFFFFFFF for v in (usize, csize, header)]
    if not any(wanted):
        return usize, csize, header
    at = 0
    while at + 4 <= len(extra):
        kind, n = struct.unpack_from("<HH", extra, at)
        if kind == 1:
            field = extra[at + 4:at + 4 + n]
            values, i = [usize, csize, header], 0
            for k in range(3):
                if wanted[k]:
                    if i + 8 > len(field):
                        raise ArchiveError("a damaged ZIP64 extra field")
                    (values[k],) = struct.unpack_from("<Q", field, i)
                    i += 8
            return tuple(values)
        at += 4 + n
    raise ArchiveError("a zip entry without the ZIP64 field its sizes need")


# ---------------------------------------------------------------------------------------
# data.pkl, read by a small pickle machine that knows only what torch.save writes for plain
# values and tensors: nothing is imported or called.


class Global:
    """A name data.pkl refers to: a storage class, the tensor rebuilder or OrderedDict."""

    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name


class Storage:
    """A tensor storage: the zip entry data/<key>, its element type and element count."""

    __slots__ = ("key", "dtype", "itemsize", "numel")

    def __init__(self, key, kind, numel):
        self.key, self.numel = key, numel
        self.dtype, self.itemsize = STORAGES[kind]


class Tensor:
    """A tensor of the sample, as torch.load would build it: storage, offset, shape, strides."""

    __slots__ = ("storage", "offset", "shape", "stride")

    def __init__(self, storage, offset, shape, stride):
        self.storage, self.offset, self.shape, self.stride = storage, offset, shape, stride

    @property
    def dtype(self):
        """The element type as torch prints it ("int64", "bfloat16", ...)."""
        return self.storage.dtype

    @property
    def size(self):
        """The shape (torch's name for it, Tensor.size())."""
        return self.shape

    @property
    def key(self):
        """The storage's zip entry, data/<key>."""
        return self.storage.key


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def rebuild_tensor(args):
    """torch._utils._rebuild_tensor_v2(storage, offset, shape, stride, requires_grad, hooks[, metadata]),
    checked: the tensor lies inside its storage."""
    if not isinstance(args, tuple) or len(args) not in (6, 7):
        raise TensorError("a tensor record of an unknown shape")
    storage, offset, shape, stride, grad, hooks = args[:6]
    if not isinstance(storage, Storage) or not is_int(offset) or offset < 0:
        raise TensorError("a tensor record without its storage")
    for dims in (shape, stride):
        if not isinstance(dims, tuple) or len(dims) > MAX_DIMS or not all(is_int(d) and d >= 0 for d in dims):
            raise TensorError("a tensor whose shape or strides are not up to %d sizes" % MAX_DIMS)
    if len(shape) != len(stride) or not isinstance(grad, bool) or not isinstance(hooks, dict) or hooks:
        raise TensorError("a tensor record that torch.save does not write")
    if len(args) == 7 and not isinstance(args[6], dict):
        raise TensorError("a tensor record that torch.save does not write")
    count = 1
    for d in shape:
        count *= d
    if count:
        extent = offset + 1 + sum((d - 1) * s for d, s in zip(shape, stride))
        if extent > storage.numel or count > storage.numel:
            raise TensorError("a tensor of shape %s reaching past its storage of %d elements" % (list(shape), storage.numel))
    return Tensor(storage, offset, shape, stride)


def unpickle(data):
    """The value data.pkl holds, built from the opcodes torch.save's pickler writes (protocol 2,
    and the plain-value opcodes of 3 and 4); anything else is refused. Returns (value,
    storages by key)."""
    stack, marks, memo, storages = [], [], dict(), dict()
    pos, end, ops = 0, len(data), 0

    def take(n):
        nonlocal pos
        if n < 0 or pos + n > end:
            raise PickleError("data.pkl ends inside an instruction")
        pos += n
        return data[pos - n:pos]

    def pop():
        if not stack or (marks and len(stack) <= marks[-1]):
            raise PickleError("data.pkl pops a value it has not pushed")
        return stack.pop()

    def top():
        if not stack:
            raise PickleError("data.pkl uses a value it has not pushed")
        return stack[-1]

    def since_mark():
        if not marks:
            raise PickleError("data.pkl closes a mark it has not opened")
        at = marks.pop()
        items = stack[at:]
        del stack[at:]
        return items

    def text(raw):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise PickleError("data.pkl holds a string that is not UTF-8") from None

    def put(key, value):
        d = top()
        if not isinstance(d, dict):
            raise PickleError("data.pkl sets an item of something that is not a dict")
        if not (isinstance(key, str) or is_int(key)):
            raise PickleError("a dict key that is not a string or an integer")
        d[key] = value

    while True:
        ops += 1
        if ops > MAX_OPS:
            raise PickleError("data.pkl has more than %d instructions" % MAX_OPS)
        op = take(1)
        if op == b"\x80":  # PROTO
            if take(1)[0] > 5 or ops != 1:
                raise PickleError("data.pkl is not a pickle torch.save writes")
        elif op == b"\x95":  # FRAME
            take(8)
        elif op == b"(":  # MARK
            marks.append(len(stack))
        elif op == b"}":
            stack.append(dict())
        elif op == b"]":
            stack.append([])
        elif op == b")":
            stack.append(())
        elif op == b"t":
            stack.append(tuple(since_mark()))
        elif op in (b"\x85", b"\x86", b"\x87"):  # TUPLE1, TUPLE2, TUPLE3
            items = [pop() for _ in range(op[0] - 0x84)]
            stack.append(tuple(reversed(items)))
        elif op == b"a":  # APPEND
            value = pop()
            if not isinstance(top(), list):
                raise PickleError("data.pkl appends to something that is not a list")
            top().append(value)
        elif op == b"e":  # APPENDS
            items = since_mark()
            if not isinstance(top(), list):
                raise PickleError("data.pkl appends to something that is not a list")
            top().extend(items)
        elif op == b"s":  # SETITEM
            value = pop()
            put(pop(), value)
        elif op == b"u":  # SETITEMS
            items = since_mark()
            if len(items) % 2:
                raise PickleError("data.pkl sets a key without a value")
            for i in range(0, len(items), 2):
                put(items[i], items[i + 1])
        elif op in (b"q", b"r", b"\x94"):  # BINPUT, LONG_BINPUT, MEMOIZE
            key = take(1)[0] if op == b"q" else struct.unpack("<I", take(4))[0] if op == b"r" else len(memo)
            memo[key] = top()
        elif op in (b"h", b"j"):  # BINGET, LONG_BINGET
            key = take(1)[0] if op == b"h" else struct.unpack("<I", take(4))[0]
            if key not in memo:
                raise PickleError("data.pkl refers to a value it has not stored")
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
                raise PickleError("data.pkl holds an integer of more than 64 bits")
            stack.append(int.from_bytes(take(n), "little", signed=True))
        elif op == b"G":
            stack.append(struct.unpack(">d", take(8))[0])
        elif op == b"X":
            stack.append(text(take(struct.unpack("<I", take(4))[0])))
        elif op == b"\x8c":  # SHORT_BINUNICODE
            stack.append(text(take(take(1)[0])))
        elif op == b"\x8d":  # BINUNICODE8
            stack.append(text(take(struct.unpack("<Q", take(8))[0])))
        elif op == b"N":
            stack.append(None)
        elif op == b"\x88":
            stack.append(True)
        elif op == b"\x89":
            stack.append(False)
        elif op in (b"c", b"\x93"):  # GLOBAL, STACK_GLOBAL
            if op == b"c":
                raw = line_pair(data, pos)
                pos += len(raw[0]) + len(raw[1]) + 2
                module, name = text(raw[0]), text(raw[1])
            else:
                name, module = pop(), pop()
                if not (isinstance(module, str) and isinstance(name, str)):
                    raise PickleError("data.pkl names an object with something that is not a string")
            if (module, name) not in (REBUILD, ORDERED_DICT) and not (module == "torch" and name in STORAGES):
                raise PickleError("data.pkl refers to %s, which a sample does not hold" % quoted("%s.%s" % (module, name)))
            stack.append(Global(module, name))
        elif op == b"Q":  # BINPERSID
            pid = pop()
            if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], Global)
                    and pid[1].module == "torch" and isinstance(pid[2], str) and len(pid[2]) <= 64
                    and isinstance(pid[3], str) and is_int(pid[4]) and pid[4] >= 0):
                raise PickleError("data.pkl refers to a storage in a form torch.save does not write")
            known = storages.get(pid[2])
            if known is None:
                known = storages[pid[2]] = Storage(pid[2], pid[1].name, pid[4])
            elif (known.dtype, known.numel) != (STORAGES[pid[1].name][0], pid[4]):
                raise PickleError("storage %s is declared twice, differently" % quoted(pid[2]))
            stack.append(known)
        elif op == b"R":  # REDUCE
            args = pop()
            fn = pop()
            if isinstance(fn, Global) and (fn.module, fn.name) == REBUILD:
                stack.append(rebuild_tensor(args))
            elif isinstance(fn, Global) and (fn.module, fn.name) == ORDERED_DICT and args == ():
                stack.append(dict())
            else:
                raise PickleError("data.pkl calls something other than torch.save's tensor rebuilder")
        elif op == b".":  # STOP
            value = pop()
            check_tree(value)
            return value, storages
        else:
            raise PickleError("data.pkl uses pickle instruction 0x%02x, which torch.save does not write" % op[0])


def line_pair(data, pos):
    """The two newline-ended names of a GLOBAL at `pos`, each at most 200 bytes."""
    names = []
    for _ in range(2):
        nl = data.find(b"\n", pos, pos + 201)
        if nl < 0:
            raise PickleError("data.pkl names an object without ending the name")
        names.append(data[pos:nl])
        pos = nl + 1
    return names


def check_tree(root):
    """Refuse a value that refers to itself, is nested more than MAX_DEPTH deep, or would be
    more than MAX_NODES values once written out (shared references count each time they are
    reached: `a = [a, a]` sixty times over is small in data.pkl and 2**60 values in print)."""
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
                nodes += n
                depth = max(depth, d)
            if nodes > MAX_NODES:
                raise PickleError("data.pkl holds a value that expands to more than %d values (shared references)" % MAX_NODES)
            if depth + 1 > MAX_DEPTH:
                raise PickleError("data.pkl nests values more than %d levels deep" % MAX_DEPTH)
            done[me] = (nodes, depth + 1)
            continue
        if me in done:
            continue
        if me in path:
            raise PickleError("data.pkl holds a value that contains itself")
        path.add(me)
        todo.append((obj, True))
        for item in items:
            if isinstance(item, (list, tuple, dict)) and id(item) not in done:
                todo.append((item, False))




def read_archive(fd, size=None):
    """The archive in the open file `fd`, the value its data.pkl holds and its storages by key,
    read within the bounds above; the storages' entries are not looked at yet (check_storages)."""
    archive = Archive(fd, size)
    if archive.prefix + "byteorder" in archive.entries and archive.read("byteorder", 16) != b"little":
        raise ArchiveError("a big-endian archive")
    value, storages = unpickle(archive.read("data.pkl", MAX_PICKLE))
    return archive, value, storages


def check_storages(archive, storages):
    """Refuse a storage whose entry does not hold exactly its declared elements, or lies outside
    the file's data (none of their data is read)."""
    for key, s in storages.items():
        e = archive.entry("data/" + key)
        if e.size != s.numel * s.itemsize:
            raise TensorError("storage %s holds %d bytes, not the %d its %d %s elements take"
                              % (quoted(key), e.size, s.numel * s.itemsize, s.numel, s.dtype))
        archive.data_at(e)


class Sample:
    """A dumped sample opened for reading its ids and patching its loss mask."""

    def __init__(self, path):
        self.path = path
        fd = open_regular(path)
        try:
            archive, self.data, storages = read_archive(fd)
            self.prefix = archive.prefix
            if not isinstance(self.data, dict):
                raise MaskError("the sample is not a dict")
            for key in ("input_ids", "loss_mask"):
                ref = self.data.get(key)
                if not isinstance(ref, Tensor) or ref.dtype != "int64" or len(ref.shape) != 1 or (ref.stride != (1,) and ref.shape[0] > 1):
                    raise MaskError("%s is not a 1-d int64 tensor" % key)
                if ref.shape[0] > MAX_TOKENS:
                    raise MaskError("%s declares %d ids, more than the %d a sample may have" % (key, ref.shape[0], MAX_TOKENS))
            if self.data["input_ids"].shape != self.data["loss_mask"].shape:
                raise MaskError("input_ids and loss_mask differ in length")
            rid = self.data.get("rid")
            if rid is not None and not (isinstance(rid, str) and 0 < len(rid.encode("utf-8", "surrogatepass")) <= MAX_RID):
                raise MaskError("its rid is not a string of 1 to %d bytes" % MAX_RID)
            prefix = self.data.get("prefix_len")
            if prefix is not None and not (is_int(prefix) and 0 <= prefix <= MAX_TOKENS):
                raise MaskError("its prefix_len is not a count of tokens")
            check_storages(archive, storages)
        finally:
            os.close(fd)

    def _read(self, ref):
        fd = open_regular(self.path)
        try:
            archive = Archive(fd)
            info = archive.entry("data/" + ref.storage.key)
            if info.size != ref.storage.numel * 8:
                raise MaskError("the file changed while it was read")
            n = ref.shape[0]
            raw = pread(fd, n * 8, archive.data_at(info) + ref.offset * 8) if n else b""
        finally:
            os.close(fd)
        return list(struct.unpack("<%dq" % n, raw))

    def input_ids(self):
        return self._read(self.data["input_ids"])

    def mask(self):
        return self._read(self.data["loss_mask"])

    def write_mask(self, mask):
        """Replace loss_mask's values, atomically: patch a synced copy, then rename it."""
        ref = self.data["loss_mask"]
        if len(mask) != ref.shape[0]:
            raise MaskError("mask of %d for %d tokens" % (len(mask), ref.shape[0]))
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
            archive = Archive(fd)
            info = archive.entry("data/" + ref.storage.key)
            if info.size != ref.storage.numel * 8:
                raise MaskError("the file changed while it was read")
            start = archive.data_at(info)
            entry = bytearray(pread(fd, info.size, start))
            off = ref.offset * 8
            entry[off:off + 8 * len(mask)] = struct.pack("<%dq" % len(mask), *mask)
            os.pwrite(fd, bytes(entry), start)
            crc_value = zlib.crc32(entry) & 0xFFFFFFFF
            crc = struct.pack("<I", crc_value)
            os.pwrite(fd, crc, info.header + 14)
            os.pwrite(fd, crc, info.central + 16)
            os.fsync(fd)
            # read back: the entry and its CRC agree in the copy
            check = Archive(fd).entry("data/" + ref.storage.key)
            if zlib.crc32(pread(fd, check.size, start)) & 0xFFFFFFFF != crc_value or check.crc != crc_value:
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
