#!/usr/bin/env python3
"""Property tests (Hypothesis) of sglang-hs-inspect's sample reader: zip layout, data.pkl,
provenance and shapes, without PyTorch.

    python3 crates/pysplice-sglang/tests/python/hs_inspect_fuzz.py              # CI: a fixed number of examples per property
    python3 crates/pysplice-sglang/tests/python/hs_inspect_fuzz.py --minutes 10 # a longer run; prints examples and failures

Whatever the bytes, the reader (open_regular's descriptor, read_sample, facts) either returns
or raises SampleError, within a time limit per file; a file it accepts has facts that print.
Inputs: arbitrary bytes, samples as torch.save lays them out with bytes changed, cut or
inserted, data.pkl made of random instructions inside a valid archive, and random values
(nested, shared, with tensors) pickled as torch.save pickles them.
"""

import json
import os
import struct
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import hs_inspect_samples as S  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

H = S.checker()
SECONDS_PER_FILE = 5.0
examples = [0]


def read_bytes(data):
    """Read `data` as a sample file; only SampleError may come out, and it must be quick."""
    examples[0] += 1
    fd = os.memfd_create("sample") if hasattr(os, "memfd_create") else None
    if fd is None:
        import tempfile

        f = tempfile.TemporaryFile()
        fd = os.dup(f.fileno())
        f.close()
    try:
        os.write(fd, data)
        started = time.monotonic()
        try:
            value = H.read_sample(fd, len(data))
            tokens, facts = H.facts(value)
        except H.SampleError as exc:
            assert exc.kind and str(exc), "a refusal without its kind or reason"
            H.printable(str(exc))
            return None
        finally:
            assert time.monotonic() - started < SECONDS_PER_FILE, "%.1f s for one file" % (time.monotonic() - started)
        assert H.is_int(tokens) and tokens >= 0
        json.dumps(facts)  # what the report prints is small and plain
        assert len(json.dumps(facts)) < 1 << 20
        return value
    finally:
        os.close(fd)


scalars = st.one_of(st.none(), st.booleans(), st.integers(-(1 << 63), (1 << 63) - 1),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))
provenance_values = st.one_of(scalars, st.lists(scalars, max_size=6))
provenances = st.dictionaries(st.text(max_size=12), provenance_values, max_size=8)
tensors = st.builds(lambda kind, shape: S.T(kind, shape), st.sampled_from(sorted(S.ITEMSIZE)),
                    st.lists(st.integers(0, 4), max_size=3).map(tuple))


def values(leaves):
    return st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=20)


def good_sample(draw_tokens, prov):
    return S.sample_bytes(S.sample(tokens=draw_tokens, prov=prov))


@st.composite
def samples(draw):
    prov = draw(st.one_of(st.none(), provenances.map(lambda p: dict(S.provenance(), **p))))
    return good_sample(draw(st.integers(0, 40)), prov)


@st.composite
def mutated(draw):
    data = bytearray(draw(samples()))
    for _ in range(draw(st.integers(1, 8))):
        how = draw(st.sampled_from(("set", "cut", "insert", "delete", "word")))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == "set" and data:
            data[at] = draw(st.integers(0, 255))
        elif how == "word" and len(data) > at + 4:
            data[at:at + 4] = struct.pack("<I", draw(st.sampled_from((0, 1, 0xFFFF, 0xFFFFFFFF, 1 << 31, len(data)))))
        elif how == "cut":
            del data[at:]
        elif how == "insert":
            data[at:at] = draw(st.binary(max_size=16))
        elif how == "delete":
            del data[at:at + draw(st.integers(1, 16))]
    return bytes(data)


@st.composite
def mutated_pickles(draw):
    """A sample whose data.pkl (not the archive around it) has bytes changed, cut or inserted;
    its CRC is right, so the changed instructions are what is read."""
    p = S.Pickler()
    prov = draw(st.one_of(st.none(), provenances.map(lambda x: dict(S.provenance(), **x))))
    pkl = bytearray(p.dumps(S.sample(tokens=draw(st.integers(0, 20)), prov=prov)))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(pkl) - 1))
        how = draw(st.sampled_from(("set", "insert", "delete", "op")))
        if how == "set":
            pkl[at] = draw(st.integers(0, 255))
        elif how == "insert":
            pkl[at:at] = draw(st.binary(max_size=8))
        elif how == "op":
            pkl[at:at] = draw(st.sampled_from(OPS + [b"h\x02", b"h\x05", b"q\x01", b"K\x07"]))
        else:
            del pkl[at:at + draw(st.integers(1, 8))]
    entries = [("a/data.pkl", bytes(pkl)), ("a/version", b"3\n")] + [("a/data/" + k, t.data) for k, t in p.storages]
    return S.zip_bytes(entries)


OPS = [b"(", b"}", b"]", b")", b"t", b"\x85", b"\x86", b"\x87", b"a", b"e", b"s", b"u", b"N", b"\x88", b"\x89",
       b"R", b"Q", b".", b"0", b"b", b"\x81", b"\x94"]


@st.composite
def instructions(draw):
    """data.pkl of random instructions, with valid and invalid arguments."""
    out = bytearray(b"\x80\x02")
    for _ in range(draw(st.integers(0, 60))):
        kind = draw(st.integers(0, 9))
        if kind < 4:
            out += draw(st.sampled_from(OPS))
        elif kind == 4:
            out += draw(st.sampled_from((b"q", b"h"))) + bytes([draw(st.integers(0, 8))])
        elif kind == 5:
            out += b"K" + bytes([draw(st.integers(0, 255))])
        elif kind == 6:
            raw = draw(st.binary(max_size=8))
            out += b"X" + struct.pack("<I", draw(st.sampled_from((len(raw), len(raw) + 1, 1 << 30)))) + raw
        elif kind == 7:
            out += b"c" + draw(st.sampled_from((b"torch._utils\n_rebuild_tensor_v2\n", b"torch\nLongStorage\n",
                                                  b"torch\nBFloat16Storage\n", b"collections\nOrderedDict\n",
                                                  b"os\nsystem\n", b"torch\n")))
        elif kind == 8:
            out += draw(st.sampled_from((b"\x8a", b"\x8b"))) + draw(st.binary(max_size=10))
        else:
            out += draw(st.binary(max_size=4))
    if draw(st.booleans()):
        out += b"."
    return bytes(out)


def archive_of(pkl, storages=()):
    return S.zip_bytes([("a/data.pkl", pkl), ("a/version", b"3\n")] + [("a/data/%d" % i, d) for i, d in enumerate(storages)])


PROPERTIES = []


def prop(strategy):
    def wrap(fn):
        PROPERTIES.append((fn.__name__, strategy, fn))
        return fn
    return wrap


@prop(st.binary(max_size=2048))
def any_bytes(data):
    read_bytes(data)
    read_bytes(b"PK\x03\x04" + data)


@prop(mutated())
def mutated_samples(data):
    read_bytes(data)


@prop(mutated_pickles())
def mutated_data_pkl(data):
    read_bytes(data)


@prop(st.tuples(instructions(), st.lists(st.binary(max_size=64), max_size=3)))
def random_instructions(case):
    pkl, storages = case
    read_bytes(archive_of(pkl, storages))


@prop(st.tuples(values(st.one_of(scalars, tensors)), st.booleans()))
def random_values(case):
    value, share = case
    if share:  # the same object reached twice, as memo references
        value = [value, value, dict(k=value)]
    s = S.sample(extra=value)
    read_bytes(S.sample_bytes(s))
    got = read_bytes(S.sample_bytes(S.sample(prov=dict(S.provenance(), x=value))))
    if got is not None:  # accepted only as scalars or flat lists of them
        v = got["provenance"]["x"]
        assert v is None or isinstance(v, (bool, int, float, str)) or (isinstance(v, list) and not any(isinstance(i, (list, dict, tuple)) for i in v))


@prop(st.tuples(provenances, st.integers(0, 30)))
def valid_samples_are_read_back(case):
    prov, tokens = case
    full = dict(S.provenance(), **prov)
    value = read_bytes(good_sample(tokens, full))
    assert value is not None, "a sample as the dump writes it was refused"
    assert value["provenance"] == full
    assert H.facts(value)[0] == tokens


def run(name, strategy, fn, count, seed=None):
    """Runs one property for `count` examples; returns the failure's text or None."""
    test = settings(max_examples=count, deadline=None, database=None, derandomize=seed is None,
                    suppress_health_check=list(HealthCheck))(given(strategy)(fn))
    try:
        test()
    except Exception as exc:  # the shrunk counterexample, as Hypothesis reports it
        return "%s: %s: %s" % (name, type(exc).__name__, exc)
    return None


def main(argv):
    minutes = float(argv[argv.index("--minutes") + 1]) if "--minutes" in argv else None
    failures = []
    started = time.monotonic()
    if minutes is None:
        for name, strategy, fn in PROPERTIES:
            before = examples[0]
            problem = run(name, strategy, fn, 150)
            print("%s %s (%d files read)" % (name, "FAILED" if problem else "ok", examples[0] - before))
            if problem:
                failures.append(problem)
    else:
        rounds = 0
        while time.monotonic() - started < minutes * 60:
            rounds += 1
            for name, strategy, fn in PROPERTIES:
                problem = run(name, strategy, fn, 500, seed=rounds)
                if problem:
                    failures.append(problem)
                    print(problem, flush=True)
            print("round %d: %d files read, %.1f min" % (rounds, examples[0], (time.monotonic() - started) / 60), flush=True)
    print("%d files read in %.1f min, %d failures" % (examples[0], (time.monotonic() - started) / 60, len(failures)))
    for f in failures:
        print("FAILURE " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
