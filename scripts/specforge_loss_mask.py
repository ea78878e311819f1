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
import io
import json
import os
import pickle
import socket
import struct
import sys
import zipfile
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
# one entry per storage. Only plain containers, tensors and scalars are accepted.


class TensorRef:
    """A tensor in a sample: its storage entry, element type and layout."""

    def __init__(self, storage, offset, size, stride):
        self.key, self.dtype, self.numel = storage
        self.offset, self.size, self.stride = int(offset), tuple(size), tuple(stride)


_DTYPES = dict(LongStorage=("<q", 8), IntStorage=("<i", 4), BFloat16Storage=(None, 2), HalfStorage=(None, 2), FloatStorage=(None, 4))


class _Storage:
    def __init__(self, name):
        self.name = name


def _rebuild_tensor(storage, offset, size, stride, *rest):
    return TensorRef(storage, offset, size, stride)


class _SampleUnpickler(pickle.Unpickler):
    """Reads data.pkl without torch and without running anything it does not know."""

    def find_class(self, module, name):
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if module == "torch" and name in _DTYPES:
            return _Storage(name)
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedDict
        raise MaskError("unexpected object %s.%s in the sample" % (module, name))

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise MaskError("unexpected storage record %r" % (pid,))
        _, kind, key, _location, numel = pid
        return (str(key), kind.name, int(numel))


class Sample:
    """A dumped sample opened for reading its ids and patching its loss mask."""

    def __init__(self, path):
        self.path = path
        with zipfile.ZipFile(path) as zf:
            pkl = [n for n in zf.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
            if len(pkl) != 1:
                raise MaskError("not a torch.save archive")
            self.prefix = pkl[0][: -len("data.pkl")]
            order = self.prefix + "byteorder"
            if order in zf.namelist() and zf.read(order).strip() != b"little":
                raise MaskError("big-endian archive")
            self.data = _SampleUnpickler(io.BytesIO(zf.read(pkl[0]))).load()
            self.infos = {i.filename: i for i in zf.infolist()}
        if not isinstance(self.data, dict):
            raise MaskError("the sample is not a dict")
        for key in ("input_ids", "loss_mask"):
            ref = self.data.get(key)
            if not isinstance(ref, TensorRef) or ref.dtype != "LongStorage" or len(ref.size) != 1 or ref.stride != (1,):
                raise MaskError("%s is not a 1-d int64 tensor" % key)
        if self.data["input_ids"].size != self.data["loss_mask"].size:
            raise MaskError("input_ids and loss_mask differ in length")

    def _entry(self, ref):
        info = self.infos.get(self.prefix + "data/" + ref.key)
        if info is None or info.compress_type != zipfile.ZIP_STORED:
            raise MaskError("storage %s missing or compressed" % ref.key)
        return info

    def _data_offset(self, f, info):
        f.seek(info.header_offset)
        head = f.read(30)
        if head[:4] != b"PK\x03\x04":
            raise MaskError("bad zip entry header")
        name_len, extra_len = struct.unpack("<HH", head[26:30])
        return info.header_offset + 30 + name_len + extra_len

    def _read(self, ref):
        info = self._entry(ref)
        with open(self.path, "rb") as f:
            f.seek(self._data_offset(f, info) + ref.offset * 8)
            raw = f.read(ref.size[0] * 8)
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
        info = self._entry(ref)
        folder, base = os.path.split(os.path.abspath(self.path))
        _remove_stale_mask_temporaries(folder, base)
        # A name of this process's own: a writer killed mid-copy leaves its temporary behind.
        host = socket.gethostname().replace("/", "_")
        tmp = os.path.join(folder, ".%s.mask.%d.%s.%s.tmp" % (base, os.getpid(), os.urandom(4).hex(), host))
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(tmp, flags, 0o600)
        try:
            with open(self.path, "rb") as src, os.fdopen(fd, "r+b") as dst:
                fd = None
                os.fchmod(dst.fileno(), os.fstat(src.fileno()).st_mode & 0o777)
                while True:
                    block = src.read(1 << 24)
                    if not block:
                        break
                    dst.write(block)
                start = self._data_offset(dst, info)
                dst.seek(start)
                entry = bytearray(dst.read(info.file_size))
                at = ref.offset * 8
                entry[at : at + 8 * len(mask)] = struct.pack("<%dq" % len(mask), *mask)
                dst.seek(start)
                dst.write(entry)
                crc = struct.pack("<I", zlib.crc32(entry) & 0xFFFFFFFF)
                dst.seek(info.header_offset + 14)
                dst.write(crc)
                dst.seek(_central_entry(dst, info.filename) + 16)
                dst.write(crc)
                dst.flush()
                os.fsync(dst.fileno())
            with zipfile.ZipFile(tmp) as zf:  # reads the entry back and checks its CRC
                zf.read(info.filename)
            os.replace(tmp, self.path)
            tmp = None
            dfd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        finally:
            if fd is not None:
                os.close(fd)
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


def _central_entry(f, name):
    """Offset of `name`'s central directory record (read from the end of the file)."""
    f.seek(0)
    with zipfile.ZipFile(f) as zf:
        start = zf.start_dir
    f.seek(start)
    offset = start
    wanted = name.encode("utf-8")
    while True:
        head = f.read(46)
        if head[:4] != b"PK\x01\x02":
            raise MaskError("zip entry %s not in the central directory" % name)
        name_len, extra_len, comment_len = struct.unpack("<HHH", head[28:34])
        if f.read(name_len) == wanted:
            return offset
        f.seek(extra_len + comment_len, 1)
        offset += 46 + name_len + extra_len + comment_len


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
        except (MaskError, OSError, zipfile.BadZipFile, pickle.UnpicklingError) as exc:
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
