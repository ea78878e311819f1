"""Read SGLang's request dumps without running them, and turn each finished request into a sample.

A production SGLang server (0.4.6 to 0.5.23) whose request dump is turned on at run time
(`POST /configure_logging` with `dump_requests_folder`) pickles what it served to `*.pkl`
files: 0.4.x a list of `(request, output, created, finished)` tuples; 0.5.x a dict `{"server_args", "requests": [...]}`
(plus `config_updates` and `resolved_config` in 0.5.23). Crash dumps (`crash_dump_*.pkl`) have the
0.5.x shape. The request is `sglang.srt.managers.io_struct.GenerateReqInput`; the output a dict of
`text`, `output_ids` (0.5.x; 0.4.x dumps hold only `text`) and `meta_info` (`finish_reason`,
`prompt_tokens`, `completion_tokens`, ...).

A pickle is a program, so a file is first scanned opcode by opcode (`scan`): protocol 2 to 5 only;
no opcode that names a persistent id, an extension code or an out-of-band buffer; every declared
length within the bytes the file has left; nesting at most MAX_DEPTH; the memory the objects
would take estimated and bounded. Only then does the standard C unpickler read it, with a
`find_class` that answers exactly the classes these releases pickle there (KNOWN) with inert
record types, which store their fields and run nothing; anything else is refused with its name,
except inside a 0.5.x dump's server arguments (METADATA), whose ModelConfig and bookkeeping hold
classes of SGLang, transformers and torch: those are opaque inert records, and refuse the file
anywhere else. SGLang is never imported; nothing in a file is called.

`harvest(paths, options, tokenizer)` yields one `Item` per request: its sample (the prompt's
token ids followed by the generated `output_ids`, the loss mask 1 on the generated tokens only)
or the reason it is skipped, counted by `reason` (`REASONS`). Needs only the standard library; the
tokenizer (transformers) only for requests that reached the server as text.
"""

import hashlib
import io
import math
import os
import pickle
import re
import stat
import struct
import time
import types

from .masks import shown

MAX_DEPTH = 48  # containers within containers (a dump needs about 12)
MAX_MARKS = 64  # open MARKs at once
MAX_LINE = 256  # bytes of a protocol 2/3 GLOBAL's module or name line
DEFAULT_MAX_BYTES = 512 << 20  # a file larger than this is not read (--max-dump-size)
# What the unpickled objects may take, estimated from the opcodes (see `scan`): a list of
# small ints costs 8 bytes a reference for 2 bytes of pickle, so about four times the file.
DEFAULT_MAX_MEMORY = 4 << 30

# The classes a request dump holds, by (module, name), per release family: the request types of
# io_struct (GenerateReqInput; EmbeddingReqInput, whose outputs are counted and skipped), and
# in 0.5.x the server's arguments (`server_args`: a dataclass in 0.5.9, a struct pickled
# through `_rebuild_server_args` in 0.5.23, LoRARef objects in `lora_paths` once LoRA is on).
# Read from each release's `TokenizerManager.dump_requests` / `_dump_data_to_file`.
IO = "sglang.srt.managers.io_struct"
KNOWN = {
    (IO, "GenerateReqInput"): "0.4.6-0.5.23",
    (IO, "EmbeddingReqInput"): "0.4.6-0.5.23",
    ("sglang.srt.server_args", "ServerArgs"): "0.5.x",
    ("sglang.srt.server_args", "_rebuild_server_args"): "0.5.23",
    ("sglang.srt.lora.lora_registry", "LoRARef"): "0.5.x",
}


class _Builtin:
    """A builtin that a REDUCE may call with data only: `takes` gives, for each number of
    arguments it may have, the types of each (no argument is always allowed).
    `bytearray(10**12)` or a generator is refused, `set([1, 2])`, `OrderedDict()` or
    `bytearray(b"..")` are not. It takes no state (BUILD)."""

    __slots__ = ("name", "make", "takes")

    def __init__(self, name, make, *takes):
        self.name, self.make = name, make
        self.takes = {len(each): each for each in takes}
        self.takes[0] = ()

    def __call__(self, *args):
        each = self.takes.get(len(args))
        if each is None or not all(isinstance(a, t) for a, t in zip(args, each)):
            raise pickle.UnpicklingError("%s called with arguments that are not data" % self.name)
        return self.make(*args)

    def __setstate__(self, state):
        raise pickle.UnpicklingError("a state given to %s, which takes none" % self.name)


def _bytearray(data=b"", encoding=None):
    """bytearray(bytes) (protocol 3 and later), bytearray(str, "latin-1") (protocol 2): the
    text is encoded by str.encode's own latin-1, never through the codec registry, which
    would import the module of any codec named."""
    if encoding is None:
        return bytearray(data)
    if encoding not in ("latin-1", "latin1"):
        raise pickle.UnpicklingError("bytearray called with the encoding %s, not latin-1" % quoted(encoding, 40))
    return bytearray(data.encode("latin-1"))


_ITEMS = (list, tuple, set, frozenset)
# Builtins a dump may hold through a global (protocol 2/3 spell sets and OrderedDicts so).
BUILTINS = {
    ("collections", "OrderedDict"): _Builtin("OrderedDict", dict, ((list, tuple, dict),)),
    ("builtins", "set"): _Builtin("set", set, (_ITEMS,)),
    ("builtins", "frozenset"): _Builtin("frozenset", frozenset, (_ITEMS,)),
    ("builtins", "bytearray"): _Builtin("bytearray", _bytearray, ((bytes, bytearray, list, tuple),), (str, str)),
}

# Why a request gives no sample (the counts the sender prints), in the order printed.
REASONS = (
    ("length", "stopped by max_new_tokens (length)"),
    ("abort", "aborted"),
    ("unfinished", "unfinished (a crash dump's requests in flight)"),
    ("other-finish", "another finish reason"),
    ("partial-stream", "streamed, only the last delta dumped (never sampled)"),
    ("not-generation", "not a generation request (embedding)"),
    ("multimodal", "images, audio, video or embeddings in the input"),
    ("batch", "a batch in one request object"),
    ("no-tokenizer", "text that needs --tokenizer"),
    ("tokens-differ", "text that does not tokenize to the server's token count"),
    ("malformed", "fields of the wrong type"),
    ("too-short", "under --min-tokens or --min-completion"),
    ("too-long", "over --max-tokens"),
    ("sampled-out", "left out by --sample-fraction"),
    ("duplicate", "the same prompt and completion as an earlier one"),
)
REASON_TEXT = dict(REASONS)


class DumpError(Exception):
    """A dump file that is refused as a whole; the message says why."""


def quoted(text, limit=120):
    """`text` for a message: the programs' one printable form, cut at `limit` characters."""
    return shown(text, limit)


# ---------------------------------------------------------------------------------------
# The inert records: what the known classes become


class Record:
    """One object of a known SGLang class: its fields, nothing run. `kind` is (module, name)."""

    kind = ("", "")
    bookkeeping = types.MappingProxyType({})  # 0.5.23's ServerArgs: its __dict__ (see _rebuild_server_args)

    def __new__(cls, *args, **kwargs):
        self = object.__new__(cls)
        self.fields = {}
        self.args = args
        return self

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        # BUILD: a dataclass gives its __dict__; a slotted class (dict or None, slots dict)
        if isinstance(state, tuple) and len(state) == 2:
            for part in state:
                if part is not None and not isinstance(part, dict):
                    raise pickle.UnpicklingError("%s: a state that is not a dict" % self.name())
                self.fields.update(part or {})
        elif isinstance(state, dict):
            self.fields.update(state)
        else:
            raise pickle.UnpicklingError("%s: a state that is not a dict" % self.name())

    @classmethod
    def name(cls):
        return "%s.%s" % cls.kind

    def get(self, key, default=None):
        return self.fields.get(key, default)


_RECORD_TYPES = {}


def _record_type(module, name):
    kind = (module, name)
    cls = _RECORD_TYPES.get(kind)
    if cls is None:
        cls = type(name, (Record,), {"kind": kind, "__module__": __name__})
        _RECORD_TYPES[kind] = cls
    return cls


def _rebuild_server_args(cls, fields, bookkeeping=None):
    """0.5.23's ServerArgs.__reduce__ target, as data: the record of `cls` with `fields`, and
    the instance's `__dict__` (resolution bookkeeping: the declared overrides with the resolved
    CudaGraphConfig, the ModelConfig, ...) kept apart in `bookkeeping`."""
    if not (isinstance(cls, type) and issubclass(cls, Record)) or not isinstance(fields, dict):
        raise pickle.UnpicklingError("_rebuild_server_args with arguments of the wrong kind")
    if bookkeeping is not None and not isinstance(bookkeeping, dict):
        raise pickle.UnpicklingError("_rebuild_server_args with bookkeeping that is not a dict")
    record = cls()
    record.fields.update(fields)
    record.bookkeeping = dict(bookkeeping or {})
    return record


REBUILD = _Builtin("_rebuild_server_args", _rebuild_server_args, (object, object), (object, object, object))


# The server's arguments in a 0.5.x dump carry more than their fields: 0.5.9's ServerArgs keeps
# the ModelConfig it made (with the model's transformers config, a torch dtype, SGLang enums),
# 0.5.23's its resolution bookkeeping. Classes of these packages are read there as opaque
# records (inert like the others, their contents never used); anywhere else in a file, or of
# any other package, they refuse it (`METADATA` are the keys where they may be).
OPAQUE_PACKAGES = ("sglang", "transformers", "torch", "numpy", "enum", "collections", "datetime", "pathlib", "argparse")
METADATA = ("server_args", "config_updates", "resolved_config")
MAX_METADATA_NODES = 1 << 20


class RestrictedUnpickler(pickle.Unpickler):
    """The standard unpickler with every global answered from KNOWN and BUILTINS, or as an
    opaque record type (counted in `opaque`, checked by `load`) for OPAQUE_PACKAGES."""

    def __init__(self, file):
        super().__init__(file)
        self.opaque = []  # every opaque record made, to be found under METADATA
        self.opaque_types = {}

    def find_class(self, module, name):
        kind = (module, name)
        if kind in BUILTINS:
            return BUILTINS[kind]
        if kind == ("sglang.srt.server_args", "_rebuild_server_args"):
            return REBUILD
        if kind in KNOWN:
            return _record_type(module, name)
        if module.split(".", 1)[0] in OPAQUE_PACKAGES and kind not in self.opaque_types:
            made = self.opaque

            def new(cls, *args, **kwargs):
                self = Record.__new__(cls, *args)
                made.append(self)
                return self

            self.opaque_types[kind] = type(name, (Record,), {"kind": kind, "opaque": True, "__new__": new, "__module__": __name__})
        if kind in self.opaque_types:
            return self.opaque_types[kind]
        raise pickle.UnpicklingError("refers to %s.%s, which no request dump holds" % (quoted(module, 80), quoted(name, 80)))

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("a persistent id, which no request dump holds")


# ---------------------------------------------------------------------------------------
# The opcode scan

# opcode -> (bytes of its argument, or a code: "u1"/"u4"/"u8" a counted payload of that
# length's width, "line2" two text lines), kind of push for the depth and memory estimate.
_FIXED = {
    b"K": 1, b"M": 2, b"J": 4, b"G": 8, b"h": 1, b"j": 4, b"q": 1, b"r": 4, b"\x80": 1,
}
_COUNTED = {
    b"T": "<I", b"U": "<B", b"X": "<I", b"B": "<I", b"C": "<B", b"\x8c": "<B", b"\x8d": "<Q",
    b"\x8e": "<Q", b"\x96": "<Q", b"\x8a": "<B", b"\x8b": "<I",
}
_REFUSED = {
    b"P": "a persistent id", b"Q": "a persistent id", b"\x82": "an extension code",
    b"\x83": "an extension code", b"\x84": "an extension code", b"\x97": "an out-of-band buffer",
    b"\x98": "an out-of-band buffer", b"i": "a protocol 0 instance", b"o": "a protocol 0 instance",
    b"I": "a protocol 0 value", b"L": "a protocol 0 value", b"F": "a protocol 0 value",
    b"S": "a protocol 0 value", b"V": "a protocol 0 value", b"g": "a protocol 0 memo",
    b"p": "a protocol 0 memo",
}
# A run of small ints closed by APPENDS, as pickle writes the token lists (1,000 a batch).
_INT_RUN = re.compile(rb"(?:\((?:K.|M..|J....|G.{8}|\x88|\x89|N)*e)+", re.S)
_SIZE_ITEM, _SIZE_INT, _SIZE_CONTAINER, _SIZE_TEXT = 8, 32, 72, 56
# What a call's copy of one item of a container may take: set() and frozenset() grow their table
# to up to 8 slots of 16 bytes an item, dict() about as much; the bytes of a str or bytes count once.
_SIZE_COPY = 128


class _Made:
    """What the scan knows of one object the pickle makes (a number, text or bytes is the int
    of its length instead): its kind, how deep it nests, how many items it holds, the items of a
    short tuple (a call's arguments), and whether it was placed in another object. Once placed
    its depth is final: a pickle that adds to it after (through the memo) is refused."""

    __slots__ = ("kind", "depth", "count", "items", "placed")

    def __init__(self, kind, depth=1, count=0, items=None):
        self.kind, self.depth, self.count, self.items, self.placed = kind, depth, count, items, False


_OPEN = {b"]": "list", b"}": "dict", b")": "tuple", b"\x8f": "set"}
_FROM_MARK = {b"t": "tuple", b"l": "list", b"d": "dict", b"\x91": "frozenset"}
_GROWS = ("list", "dict", "set", "object")  # what APPEND(S), SETITEM(S), ADDITEMS may add to


def _place(v):
    """`v` goes into another object (an item, a key, a state, an argument): its depth."""
    if type(v) is int:
        return 0
    v.placed = True
    return v.depth


def _grow(target, depth, count, at, what="adds to"):
    """`target` gains `count` items nested `depth` deep."""
    if type(target) is int or target.kind not in (_GROWS if what == "adds to" else ("object",)):
        kind = "a value" if type(target) is int else "a class or function" if target.kind == "global" else "a " + target.kind
        raise DumpError("byte %d %s %s, which no request dump does" % (at, what, kind))
    if target.placed:
        raise DumpError("byte %d %s an object after it was placed in another (through the memo), which no request dump does" % (at, what))
    if depth >= target.depth:
        if depth + 1 > MAX_DEPTH:
            raise DumpError("nested more than %d deep at byte %d" % (MAX_DEPTH, at))
        target.depth = depth + 1
    target.count += count


def _placed(items):
    """The items go into another object: the deepest one's depth."""
    depth = 0
    for v in items:
        if type(v) is not int:
            v.placed = True
            if v.depth > depth:
                depth = v.depth
    return depth


def _made(kind, items, at, keep=False):
    depth = 1 + _placed(items)
    if depth > MAX_DEPTH:
        raise DumpError("nested more than %d deep at byte %d" % (MAX_DEPTH, at))
    return _Made(kind, depth, len(items), list(items) if keep and len(items) <= 3 else None)


def _copied(v):
    """The bytes a call that copies `v` may allocate."""
    if type(v) is int:
        return v
    return _SIZE_CONTAINER + _SIZE_COPY * v.count


def _call(args, at):
    """What a call with the argument tuple `args` may copy (a builtin copies its argument, a
    record keeps the tuple); DumpError when `args` is not a tuple."""
    if type(args) is int or args.kind != "tuple":
        raise DumpError("byte %d calls with arguments that are not a tuple" % at)
    if args.items is None:
        return _SIZE_ITEM * args.count
    return sum(_copied(v) for v in args.items) + _SIZE_ITEM * args.count


def scan(data, max_memory=DEFAULT_MAX_MEMORY):
    """Check the pickle `data` before it is unpickled; DumpError naming the offset otherwise.
    Returns the type code of the top object (b"]" a list, b"}" a dict, ...).

    The scan plays the pickle's stack and memo with what it knows of each object (`_Made`):
    the depth of every object, through the memo too, stays within MAX_DEPTH; BUILD sets the
    state of an object a class made, never of a class or function; and the memory is the sum
    of what every opcode makes, a call charged for what it copies."""
    n = len(data)
    if n < 2 or data[0:1] != b"\x80" or not 2 <= data[1] <= 5:
        raise DumpError("not a pickle of protocol 2 to 5 (SGLang writes protocol 4 or 5)")
    stack, marks, memo = [], [], {}
    top = None
    memory = 0
    pos = 2
    fixed, counted, refused, int_run = _FIXED, _COUNTED, _REFUSED, _INT_RUN.match
    try:
        while pos < n:
            op = data[pos : pos + 1]
            at = pos
            pos += 1
            if op == b"(":
                m = int_run(data, at)
                if m is not None and stack:
                    # MARK, scalars, APPENDS: the list on top gains items of depth 0 (at most
                    # one an opcode byte)
                    _grow(stack[-1], 0, m.end() - at, at)
                    memory += (m.end() - at) * 12  # at most 36 bytes of int object and reference for 3
                    pos = m.end()
                    if memory > max_memory:
                        raise DumpError("its objects would take more than %d MiB (byte %d)" % (max_memory >> 20, at))
                    continue
                marks.append(len(stack))
                if len(marks) > MAX_MARKS:
                    raise DumpError("more than %d open marks at byte %d" % (MAX_MARKS, at))
                continue
            if op in fixed:
                width = fixed[op]
                if pos + width > n:
                    raise DumpError("truncated: opcode %r at byte %d needs %d more bytes" % (op, at, width))
                arg = data[pos : pos + width]
                pos += width
                if op in (b"h", b"j"):
                    key = arg[0] if op == b"h" else struct.unpack("<I", arg)[0]
                    if key not in memo:
                        raise DumpError("byte %d reads memo %d, never stored" % (at, key))
                    stack.append(memo[key])
                    memory += _SIZE_ITEM
                elif op in (b"q", b"r"):
                    if not stack:
                        raise DumpError("byte %d stores an empty stack" % at)
                    key = arg[0] if op == b"q" else struct.unpack("<I", arg)[0]
                    if key > len(memo):
                        # pickle numbers its memo in order; the unpickler would grow its memo
                        # table to the index given (2^32 entries: 32 GiB)
                        raise DumpError("byte %d stores memo %d, out of order (%d stored)" % (at, key, len(memo)))
                    memo[key] = stack[-1]
                elif op == b"\x80":
                    raise DumpError("a second PROTO at byte %d" % at)
                else:
                    stack.append(0)
                    memory += _SIZE_INT
                continue
            if op in counted:
                fmt = counted[op]
                width = struct.calcsize(fmt)
                if pos + width > n:
                    raise DumpError("truncated: opcode %r at byte %d needs its length" % (op, at))
                length = struct.unpack(fmt, data[pos : pos + width])[0]
                pos += width
                if length > n - pos:
                    raise DumpError(
                        "byte %d declares %d bytes, the file has %d left (a truncated or forged file)" % (at, length, n - pos)
                    )
                pos += length
                stack.append(length)
                memory += _SIZE_TEXT + length
                if memory > max_memory:
                    raise DumpError("its objects would take more than %d MiB (byte %d)" % (max_memory >> 20, at))
                continue
            if op in refused:
                raise DumpError("byte %d holds %s (opcode %r), which no request dump holds" % (at, refused[op], op))
            if op == b"\x95":  # FRAME: its length must fit what is left
                if pos + 8 > n:
                    raise DumpError("truncated: a frame at byte %d without its length" % at)
                length = struct.unpack("<Q", data[pos : pos + 8])[0]
                pos += 8
                if length > n - pos:
                    raise DumpError("byte %d declares a frame of %d bytes, the file has %d left (truncated or forged)" % (at, length, n - pos))
                continue
            if op in _OPEN:
                stack.append(_Made(_OPEN[op], items=[] if op == b")" else None))
                memory += _SIZE_CONTAINER
                if top is None and len(stack) == 1:
                    top = op
            elif op == b"\x94":  # MEMOIZE
                if not stack:
                    raise DumpError("byte %d memoizes an empty stack" % at)
                memo[len(memo)] = stack[-1]
            elif op in (b"N", b"\x88", b"\x89"):
                stack.append(0)
                memory += _SIZE_ITEM
            elif op == b"a":  # APPEND
                v = stack.pop()
                _grow(stack[-1], _place(v), 1, at)
                memory += _SIZE_ITEM
            elif op == b"s":  # SETITEM
                v = stack.pop()
                k = stack.pop()
                _grow(stack[-1], max(_place(k), _place(v)), 1, at)
                memory += 2 * _SIZE_ITEM
            elif op in (b"e", b"u", b"\x90"):  # APPENDS, SETITEMS, ADDITEMS
                k = marks.pop()
                items = stack[k:]
                del stack[k:]
                if items:
                    _grow(stack[-1], _placed(items), len(items), at)
                elif not stack:
                    raise IndexError
                memory += len(items) * _SIZE_ITEM
            elif op in _FROM_MARK:  # TUPLE, LIST, DICT, FROZENSET from a mark
                k = marks.pop()
                items = stack[k:]
                del stack[k:]
                stack.append(_made(_FROM_MARK[op], items, at, keep=op == b"t"))
                memory += _SIZE_CONTAINER + len(items) * _SIZE_ITEM
            elif op in (b"\x85", b"\x86", b"\x87"):  # TUPLE1..3
                count = op[0] - 0x84
                items = stack[-count:]
                if len(items) != count:
                    raise IndexError
                del stack[-count:]
                stack.append(_made("tuple", items, at, keep=True))
                memory += _SIZE_CONTAINER + count * _SIZE_ITEM
            elif op == b"\x93":  # STACK_GLOBAL: module and name on the stack
                stack.pop()
                stack[-1] = _Made("global", depth=0)
            elif op == b"c":  # GLOBAL: module and name as two lines
                for _ in range(2):
                    end = data.find(b"\n", pos, pos + MAX_LINE + 1)
                    if end < 0:
                        raise DumpError("byte %d: a GLOBAL without its line" % at)
                    pos = end + 1
                stack.append(_Made("global", depth=0))
            elif op in (b"R", b"\x81"):  # REDUCE, NEWOBJ: callable/class, args -> object
                args = stack.pop()
                memory += _SIZE_CONTAINER + _call(args, at)
                _place(stack[-1])
                stack[-1] = _made("object", [args], at)
            elif op == b"\x92":  # NEWOBJ_EX: class, args, kwargs
                kwargs = stack.pop()
                args = stack.pop()
                memory += _SIZE_CONTAINER + _call(args, at) + _copied(kwargs)
                _place(stack[-1])
                stack[-1] = _made("object", [args, kwargs], at)
            elif op == b"b":  # BUILD: the state of an object a class made
                state = stack.pop()
                _grow(stack[-1], _place(state), 1, at, what="sets the state of")
            elif op == b"0":
                stack.pop()
            elif op == b"1":
                del stack[marks.pop() :]
            elif op == b"2":
                stack.append(stack[-1])
            elif op == b".":
                if len(stack) != 1 or marks:
                    raise DumpError("byte %d ends the pickle with %d objects on its stack" % (at, len(stack)))
                if pos != n:
                    raise DumpError("%d bytes after the pickle's end at byte %d" % (n - pos, at))
                return top
            else:
                raise DumpError("byte %d: opcode %r, which is not pickle's" % (at, op))
            if memory > max_memory:
                raise DumpError("its objects would take more than %d MiB (byte %d)" % (max_memory >> 20, at))
    except IndexError:
        raise DumpError("byte %d: an opcode without the objects it takes (a malformed pickle)" % at) from None
    raise DumpError("truncated: the pickle ends without its STOP at byte %d" % n)


# ---------------------------------------------------------------------------------------
# Files


def dump_files(dirs, min_age=0.0, now=None):
    """(path, problem) for every `*.pkl` under `dirs`, sorted by path; problem is None for a
    file to read, else why it is not read (a symlink, not a regular file, still being
    written). Hidden folders and files are passed over. A folder symlink is not followed."""
    now = time.time() if now is None else now
    out = []
    for top in dirs:
        todo = [top]
        while todo:
            folder = todo.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError as exc:
                out.append((folder, "cannot list it: %s" % (exc.strerror or exc)))
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                path = os.path.join(folder, entry.name)
                try:
                    st = os.lstat(path)
                except OSError as exc:
                    out.append((path, "cannot stat it: %s" % (exc.strerror or exc)))
                    continue
                if stat.S_ISDIR(st.st_mode):
                    todo.append(path)
                elif not entry.name.endswith(".pkl"):
                    continue
                elif stat.S_ISLNK(st.st_mode):
                    out.append((path, "a symbolic link (not followed)"))
                elif not stat.S_ISREG(st.st_mode):
                    out.append((path, "not a regular file"))
                elif min_age and now - st.st_mtime < min_age:
                    out.append((path, "modified %.0f s ago, under --min-age %.0f s (still being written?)" % (now - st.st_mtime, min_age)))
                else:
                    out.append((path, None))
    out.sort(key=lambda pe: pe[0])
    return out


def read_file(path, max_bytes=DEFAULT_MAX_BYTES):
    """The bytes of a regular file, opened without following a symlink or blocking on a FIFO."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise DumpError("cannot open it: %s" % (exc.strerror or exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DumpError("not a regular file")
        if st.st_size > max_bytes:
            raise DumpError("%d bytes, over --max-dump-size %d" % (st.st_size, max_bytes))
        chunks, left = [], st.st_size + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise DumpError("grew past --max-dump-size while read")
        return data
    finally:
        os.close(fd)


def load(data, max_memory=DEFAULT_MAX_MEMORY):
    """The dump's contents: (family, server_args record or None, [entries]); DumpError else."""
    top = scan(data, max_memory)
    unpickler = RestrictedUnpickler(io.BytesIO(data))
    try:
        obj = unpickler.load()
    except DumpError:
        raise
    except Exception as exc:  # the unpickler's refusal, or a builtin's to its arguments
        raise DumpError("refused: %s" % quoted(exc, 300)) from None
    if unpickler.opaque or unpickler.opaque_types:
        _opaque_in_metadata(obj, unpickler)
    if isinstance(obj, list) and top == b"]":
        return "0.4", None, obj
    if isinstance(obj, dict) and isinstance(obj.get("requests"), list):
        sa = obj.get("server_args")
        return "0.5", sa if isinstance(sa, (Record, dict)) else None, obj["requests"]
    raise DumpError("neither a list of requests (0.4.x) nor a dict with \"requests\" (0.5.x)")


def _opaque_in_metadata(obj, unpickler):
    """Refuse the file unless every opaque record (and opaque class) lies under METADATA."""
    seen, found, kinds, todo = set(), set(), set(), []
    if isinstance(obj, dict):
        todo = [obj.get(k) for k in METADATA]
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if len(seen) > MAX_METADATA_NODES:
            raise DumpError("server arguments of more than %d values" % MAX_METADATA_NODES)
        if isinstance(v, type):
            kinds.add(getattr(v, "kind", None))
        elif isinstance(v, Record):
            if getattr(v, "opaque", False):
                found.add(id(v))
                kinds.add(v.kind)
            todo.extend(v.fields.values())
            todo.extend(v.args)
            todo.extend(v.bookkeeping.values())
        elif isinstance(v, dict):
            todo.extend(v.keys())
            todo.extend(v.values())
        elif isinstance(v, (list, tuple, set, frozenset)):
            todo.extend(v)
    for r in unpickler.opaque:
        if id(r) not in found:
            raise DumpError("holds %s.%s outside the server's arguments, which no request dump holds" % tuple(quoted(x, 80) for x in r.kind))
    for kind in unpickler.opaque_types:
        if kind not in kinds:
            raise DumpError("refers to %s.%s outside the server's arguments, which no request dump holds" % tuple(quoted(x, 80) for x in kind))


# ---------------------------------------------------------------------------------------
# Requests -> samples


class Options:
    """What the harvest keeps (the sender's command-line options)."""

    def __init__(self, keep_finish=("stop",), sample_fraction=1.0, seed=0, min_tokens=1, max_tokens=None,
                 min_completion=1, dedup=True, max_bytes=DEFAULT_MAX_BYTES, max_memory=DEFAULT_MAX_MEMORY, min_age=0.0):
        self.keep_finish = tuple(keep_finish)
        self.sample_fraction, self.seed = float(sample_fraction), str(seed)
        self.min_tokens, self.max_tokens, self.min_completion = min_tokens, max_tokens, min_completion
        self.dedup, self.max_bytes, self.max_memory, self.min_age = dedup, max_bytes, max_memory, min_age


class Item:
    """One request of a dump: `ids`/`mask` and `rid` when it is a sample, else `reason`."""

    __slots__ = ("file", "index", "rid", "ids", "mask", "prompt_len", "reason", "detail", "source")

    def __init__(self, file, index):
        self.file, self.index = file, index
        self.rid = self.ids = self.mask = self.reason = self.detail = None
        self.prompt_len = 0
        self.source = None

    def where(self):
        return "%s#%d" % (quoted(self.file, 300), self.index)


def _int_list(v):
    if isinstance(v, tuple):  # a crash dump keeps prompt ids as a tuple
        v = list(v)
    if not isinstance(v, list):
        return None
    for x in v:
        if type(x) is not int or x < 0:
            return None
    return v


def _finish(meta):
    fr = meta.get("finish_reason")
    if fr is None:
        return "unfinished", None
    if isinstance(fr, dict):
        kind = fr.get("type")
        return (kind if isinstance(kind, str) else "other"), fr
    if isinstance(fr, str):  # some front ends flatten it
        return fr, {"type": fr}
    return "other", None


def _tokens(tokenizer, text, special):
    return [int(i) for i in tokenizer(text, add_special_tokens=special)["input_ids"]]


def prepare(item, req, out, tokenizer, options):
    """Fill `item` from one dumped (request, output): its ids and mask, or a reason."""
    if not isinstance(req, Record) or not isinstance(out, dict):
        item.reason, item.detail = "malformed", "the entry is not (request, output dict, ...)"
        return
    if req.kind != (IO, "GenerateReqInput"):
        item.reason = "not-generation"
        return
    meta = out.get("meta_info")
    if not isinstance(meta, dict):
        # an unfinished request of a crash dump: an empty output
        item.reason = "unfinished" if not out else "malformed"
        item.detail = None if not out else "no meta_info dict"
        return
    kind, fr = _finish(meta)
    if kind not in options.keep_finish:
        item.reason = {"length": "length", "abort": "abort", "unfinished": "unfinished"}.get(kind, "other-finish")
        return
    f = req.fields
    for key in ("input_embeds", "image_data", "video_data", "audio_data"):
        if f.get(key) not in (None, [], ""):
            item.reason = "multimodal"
            return
    completion_tokens = meta.get("completion_tokens")
    prompt_tokens = meta.get("prompt_tokens")
    if type(completion_tokens) is not int or type(prompt_tokens) is not int:
        item.reason, item.detail = "malformed", "meta_info without prompt_tokens and completion_tokens"
        return

    # the prompt, as the server tokenized it
    prompt = _int_list(out.get("prompt_token_ids")) if out.get("prompt_token_ids") is not None else None
    raw = f.get("input_ids")
    if prompt is None and raw is not None:
        if isinstance(raw, (list, tuple)) and raw and isinstance(raw[0], (list, tuple)):
            item.reason = "batch"
            return
        prompt = _int_list(raw)
        if prompt is None:
            item.reason, item.detail = "malformed", "input_ids is not a list of token ids"
            return
    if prompt is None:
        text = f.get("text")
        if isinstance(text, list):
            item.reason = "batch"
            return
        if not isinstance(text, str):
            item.reason, item.detail = "malformed", "neither input_ids nor text"
            return
        if tokenizer is None:
            item.reason = "no-tokenizer"
            return
        prompt = _tokens(tokenizer, text, True)  # TokenizerManager: tokenizer.encode(text)
    if len(prompt) != prompt_tokens:
        item.reason, item.detail = "tokens-differ", "prompt of %d tokens, the server counted %d" % (len(prompt), prompt_tokens)
        return

    # what was generated
    output = out.get("output_ids")
    if output is not None:
        output = _int_list(output)
        if output is None:
            item.reason, item.detail = "malformed", "output_ids is not a list of token ids"
            return
        if len(output) != completion_tokens:
            # the last delta of a stream (--stream-output in 0.5.9, incremental streaming in
            # 0.5.23): never a sample
            item.reason = "partial-stream" if len(output) < completion_tokens else "malformed"
            item.detail = "%d output_ids of %d generated" % (len(output), completion_tokens)
            return
    else:
        output = _from_logprobs(meta, completion_tokens)
        if output is None:
            # 0.4.x dumps the detokenized text only: tokenized again, and kept only when
            # that gives the number of tokens the server generated
            text = out.get("text")
            if not isinstance(text, str):
                item.reason, item.detail = "malformed", "neither output_ids nor text"
                return
            if tokenizer is None:
                item.reason = "no-tokenizer"
                return
            matched = fr.get("matched") if isinstance(fr, dict) else None
            if isinstance(matched, str) and not text.endswith(matched):
                text += matched  # the stop string, trimmed from the text, was generated
            output = _tokens(tokenizer, text, False)
            if type(matched) is int and matched >= 0:
                output.append(matched)  # the stop token, never in the text
            if len(output) != completion_tokens:
                item.reason, item.detail = "tokens-differ", "completion text of %d tokens, the server generated %d" % (len(output), completion_tokens)
                return
    total = len(prompt) + len(output)
    if total < options.min_tokens or len(output) < options.min_completion:
        item.reason = "too-short"
        return
    if options.max_tokens and total > options.max_tokens:
        item.reason = "too-long"
        return
    item.ids = prompt + output
    item.prompt_len = len(prompt)
    item.mask = [0] * len(prompt) + [1] * len(output)


def _from_logprobs(meta, n):
    """The generated ids from meta_info's output_token_logprobs, (logprob, id, text) each,
    when the request asked for them (return_logprob) and they are all there."""
    lp = meta.get("output_token_logprobs")
    if not isinstance(lp, list) or len(lp) != n or not n:
        return None
    out = []
    for e in lp:
        if not isinstance(e, (list, tuple)) or len(e) < 2 or type(e[1]) is not int:
            return None
        out.append(e[1])
    return out


def _digest(ids):
    return hashlib.sha256(struct.pack("<%dq" % len(ids), *ids)).digest()


def _keep(seed, key, fraction):
    """The seeded sample: the same requests for the same seed, in any order."""
    if fraction >= 1.0:
        return True
    h = hashlib.sha256(("%s\0%s" % (seed, key)).encode("utf-8", "backslashreplace")).digest()
    return int.from_bytes(h[:8], "big") < fraction * (1 << 64)


def _text(v, limit=512):
    return quoted(v, limit) if isinstance(v, str) else None


def _time(v):
    """A dumped time (seconds since the epoch) as a JSON number: None when it is not a number,
    ValueError when it is not a finite one (NaN, an infinity, an int no float holds)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    try:
        t = float(v)
    except OverflowError:
        t = math.inf
    if not math.isfinite(t):
        raise ValueError("not a finite time")
    return round(t, 6)


def harvest(paths, options, tokenizer=None, bad=None):
    """Items for every request of the files `paths` ([(path, problem)], see dump_files), in
    order. A file refused as a whole is reported through `bad(path, why)` and yields nothing."""
    seen = set()
    for path, problem in paths:
        if problem is not None:
            if bad is not None:
                bad(path, problem)
            continue
        try:
            data = read_file(path, options.max_bytes)
            family, server_args, entries = load(data, options.max_memory)
        except DumpError as exc:
            if bad is not None:
                bad(path, str(exc))
            continue
        del data
        model_path = None
        if server_args is not None:
            model_path = _text(server_args.get("model_path"))
        name = os.path.basename(path)
        for index, entry in enumerate(entries):
            item = Item(path, index)
            if not isinstance(entry, (tuple, list)) or len(entry) != 4:
                item.reason, item.detail = "malformed", "an entry that is not (request, output, created, finished)"
                yield item
                continue
            req, out, created, finished = entry
            try:
                prepare(item, req, out, tokenizer, options)
                if item.ids is not None:
                    try:
                        created, finished = _time(created), _time(finished)
                    except ValueError:
                        item.ids = item.mask = None
                        item.reason, item.detail = "malformed", "created or finished is not a finite time"
            except Exception as exc:  # a value no check above foresaw: named, never a traceback
                item.ids = item.mask = None
                item.reason, item.detail = "malformed", "%s: %s" % (type(exc).__name__, quoted(exc, 200))
            if item.ids is not None:
                prod_rid = req.get("rid")
                prod_rid = prod_rid if isinstance(prod_rid, str) else None
                digest = _digest(item.ids)
                key = "%s\0%r\0%s" % (prod_rid, created, digest.hex())
                if not _keep(options.seed, key, options.sample_fraction):
                    item.reason, item.ids, item.mask = "sampled-out", None, None
                elif options.dedup and digest[:16] in seen:
                    item.reason, item.ids, item.mask = "duplicate", None, None
                else:
                    seen.add(digest[:16])
                    item.rid = "hv-" + hashlib.sha256(key.encode("utf-8", "backslashreplace")).hexdigest()[:24]
                    item.source = dict(
                        kind="sglang-request-dump", file=name, path=os.path.abspath(path), index=index,
                        family=family, created=created, finished=finished,
                        production_rid=_text(prod_rid, 128), model_path=model_path,
                        prompt_tokens=item.prompt_len, completion_tokens=len(item.ids) - item.prompt_len,
                    )
            yield item
        del entries
