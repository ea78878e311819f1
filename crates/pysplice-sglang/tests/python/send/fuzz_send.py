#!/usr/bin/env python3
"""Property tests (Hypothesis) of sglang-hs-send's readers of what it does not control.

    python3 crates/pysplice-sglang/tests/python/send/fuzz_send.py                        # CI: a fixed number of examples per target
    SEND_FUZZ_MINUTES=10 python3 crates/pysplice-sglang/tests/python/send/fuzz_send.py   # each target for about that long
    SEND_FUZZ_MINUTES=10 SEND_FUZZ_TARGETS=samples python3 crates/pysplice-sglang/tests/python/send/fuzz_send.py

Needs Hypothesis, not transformers or PyTorch: send.py is imported as a module (with
crates/pysplice-sglang/python/pysplice_sglang/masks.py). Four targets, each fed Hypothesis' random and mutated inputs:

- `conversations`: JSONL lines (random JSON values, good lines with bytes changed, cut or
  inserted, deep and wide nesting, lone surrogates, random bytes) through conversations():
  each line yields a conversation (a rid of 1 to 512 bytes, messages with string roles) or a
  Skip with its reason, and no line takes more than a few seconds;
- `records`: record files (good entries, entries with fields changed, cut lines, random bytes)
  through Record: it opens, names each bad line, keeps only entries whose fields are in range,
  ends the file with a newline, and reads the same entries when opened again;
- `samples`: sample files (random bytes, samples in torch.save's layout with bytes changed,
  random data.pkl instructions, random nested and shared values beside the tensors) through
  specforge_loss_mask.Sample: read or MaskError; what is read has ids and mask of one length
  and a rid of at most 512 bytes; a mask written reads back;
- `answers`: a local server answering each request with random status lines, headers and
  bodies (chunked, short, long, cut, slow): Server.request returns or raises a transport error
  within its deadline, and answer_problem says whether the answer counts.

Prints, per target, the minutes, examples and failures (the shrunk counterexample).
"""

import json
import os
import socket
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
sys.path[:0] = [os.path.join(REPO, "crates", "pysplice-sglang", "python"), os.path.join(REPO, "crates", "pysplice-sglang", "tests", "python")]

import importlib.util  # noqa: E402

from hypothesis import HealthCheck, given, seed as fixed_seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pysplice_sglang import masks as slm  # noqa: E402

send = importlib.import_module("pysplice_sglang.send")
import send_test as T  # noqa: E402  (its torch.save-layout writer)

SECONDS = 5.0  # for one line, record, sample or answer
TMP = tempfile.mkdtemp(prefix="fuzz-send-")
examples = dict()


def count(target):
    examples[target] = examples.get(target, 0) + 1


def quick(started, what):
    took = time.monotonic() - started
    assert took < SECONDS, "%.1f s for one %s" % (took, what)


def mutate(data, edits):
    """`data` with each (kind, at, value) edit applied: change a byte, cut, insert."""
    data = bytearray(data)
    for kind, at, value in edits:
        if not data:
            break
        at %= len(data)
        if kind == 0:
            data[at] = value
        elif kind == 1:
            del data[at:]
        else:
            data[at:at] = bytes([value]) * (1 + value % 7)
    return bytes(data)


edits = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1 << 30), st.integers(0, 255)), max_size=6)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=30,
)


def json_bytes(v):
    return json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------------------------------
# conversations


def good_line(rid, turns):
    messages = [dict(role=("user", "assistant")[k % 2], content="turn %d" % k) for k in range(turns)]
    return json_bytes(dict(rid=rid, messages=messages))


lines = st.one_of(
    json_values.map(json_bytes),
    st.builds(lambda v: json_bytes(dict(messages=v)), json_values),
    st.builds(lambda v: json_bytes(dict(conversations=v, id=1)), json_values),
    st.builds(lambda r, n, e: mutate(good_line(r, n), e), json_values, st.integers(1, 4), edits),
    st.builds(lambda n, c: c[0] * n + c[1] * n, st.integers(1, 3000), st.sampled_from([(b"[", b"]"), (b"{\"a\":", b"}"), (b"[", b""), (b"[{\"a\":", b"}]")])),
    st.builds(lambda t: b'{"rid": "' + t.encode("utf-8", "surrogatepass").replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'", "messages": [{"role": "user", "content": "x"}]}',
              st.text(max_size=600)),
    st.builds(lambda k: b'{"messages": [{"role": "user", "content": "\\u%04x"}]}' % k, st.integers(0xD800, 0xDFFF)),
    st.binary(max_size=300),
)


def check_conversations(batch):
    count("conversations")
    path = os.path.join(TMP, "conv.jsonl")
    with open(path, "wb") as f:
        f.write(b"\n".join(line.replace(b"\n", b" ") for line in batch) + b"\n")
    started = time.monotonic()
    n = 0
    for _number, rid, messages, tools in send.conversations(path):
        n += 1
        if isinstance(messages, send.Skip):
            assert rid is None and str(messages)
            send.printable(str(messages))
            continue
        assert send.rid_problem(rid) is None, rid
        assert isinstance(messages, list) and messages and all(isinstance(m, dict) and isinstance(m["role"], str) for m in messages)
        assert tools is None or isinstance(tools, list)
        json.dumps(messages, ensure_ascii=False).encode("utf-8")  # text throughout
    assert n <= len(batch)
    send.count_lines(path)
    quick(started, "file of %d lines" % len(batch))


# ---------------------------------------------------------------------------------------
# records


def good_entry(rid, tokens, runs):
    return json_bytes(json.loads(T.sent_line(rid, list(range(tokens)), runs)))


entries = st.one_of(
    st.builds(lambda r, n: good_entry(r, n, [[0, n]]), st.text(min_size=1, max_size=30), st.integers(1, 50)),
    st.builds(lambda d, e: mutate(good_entry("r", 5, [[1, 3]]), e), st.none(), edits),
    st.builds(lambda v, k: json_bytes(dict(json.loads(good_entry("r", 5, [[1, 3]])), **{k: v})), json_values,
              st.sampled_from(["rid", "tokens", "mask", "ids_sha256", "line", "event"])),
    st.builds(lambda r: json_bytes(dict(event="masked", rid=r)), json_values),
    json_values.map(json_bytes),
    st.binary(max_size=200),
)


def check_records(case):
    batch, cut = case
    count("records")
    path = os.path.join(TMP, "record-%d.jsonl" % os.getpid())
    data = b"\n".join(batch)
    if cut and data:
        data = data[: len(data) - cut % len(data)]
    with open(path, "wb") as f:
        f.write(data)
    named = []
    started = time.monotonic()
    rec = send.Record(path, named.append)
    try:
        for rid, entry in rec.sent.items():
            assert send.entry_problem(entry) is None and rid == entry["rid"]
            assert entry["tokens"] <= send.MAX_TOKENS and len(entry["mask"]) <= entry["tokens"]
        for text in named:
            send.printable(text)
        assert rec.bad == len(named)
        first = dict(rec.sent), set(rec.masked)
    finally:
        rec.close()
    with open(path, "rb") as f:
        body = f.read()
    assert not body or body.endswith(b"\n"), "the record does not end with a newline"
    again = send.Record(path, lambda _t: None)
    try:
        assert (again.sent, again.masked) == first, "the record reads differently once opened"
    finally:
        again.close()
    quick(started, "record")


# ---------------------------------------------------------------------------------------
# samples


def sample_bytes(ids, rid, pkl=None, **extra):
    path = os.path.join(TMP, "build.ckpt")
    T.write_sample(path, ids, rid, pkl=pkl, **extra)
    with open(path, "rb") as f:
        return f.read()


def pickled(v):
    import pickle

    return pickle.dumps(v, protocol=2)[2:-1]


OPCODES = b"()}]tsuaeqhjJKMN\x88\x89\x85\x86\x87\x8a\x8cXcRQG.\x80\x94\x95rbip0"
values = st.recursive(st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | st.floats() | st.text(max_size=10),
                      lambda kids: st.lists(kids, max_size=5) | st.tuples(kids, kids) | st.dictionaries(st.text(max_size=5), kids, max_size=4),
                      max_leaves=40)


def shared(v, depth):
    for _ in range(depth):
        v = [v, v]
    return v


samples = st.one_of(
    st.binary(max_size=400),
    st.builds(lambda ids, e: mutate(sample_bytes(ids, "r"), e), st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=20), edits),
    st.builds(lambda ops: sample_bytes([1, 2], "r", pkl=b"\x80\x02" + bytes(OPCODES[o % len(OPCODES)] for o in ops) + b"."), st.lists(st.integers(0, 255), max_size=60)),
    st.builds(lambda raw: sample_bytes([1, 2], "r", pkl=raw), st.binary(max_size=200)),
    st.builds(lambda v, d: sample_bytes([3, 4, 5], None, pkl=T.pickle_dict(dict(
        input_ids=T.tensor("0", 3, [3]), loss_mask=T.tensor("1", 3, [3]), rid=pickled(shared(v, d)), extra=pickled(v)))),
        values, st.integers(0, 20)),
    st.builds(lambda n, numel, off: sample_bytes([7] * 3, "r", pkl=T.pickle_dict(dict(
        input_ids=T.tensor("0", numel, [n]), loss_mask=T.tensor("1", numel, [n]), rid="r"))),
        st.integers(0, 1 << 40), st.integers(0, 1 << 40), st.integers(0, 3)),
)


def check_samples(data):
    count("samples")
    path = os.path.join(TMP, "s-%d.ckpt" % os.getpid())
    with open(path, "wb") as f:
        f.write(data)
    started = time.monotonic()
    try:
        s = slm.Sample(path)
        ids, mask = s.input_ids(), s.mask()
    except slm.MaskError as exc:
        send.printable(str(exc))
        quick(started, "sample")
        return
    quick(started, "sample")
    assert len(ids) == len(mask) == s.data["input_ids"].size[0] <= slm.MAX_TOKENS
    rid = s.data.get("rid")
    assert rid is None or (isinstance(rid, str) and len(rid.encode("utf-8", "surrogatepass")) <= slm.MAX_RID)
    new = [k % 2 for k in range(len(ids))]
    s.write_mask(new)
    again = slm.Sample(path)
    assert again.mask() == new and again.input_ids() == ids


# ---------------------------------------------------------------------------------------
# answers


class Answerer:
    """A local server that answers each request with the bytes of the current example."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.reply, self.slow = b"", False
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self.one, args=(conn, self.reply, self.slow), daemon=True).start()

    def one(self, conn, reply, slow):
        try:
            conn.settimeout(5)
            T.read_request(conn)
            if slow:
                for k in range(0, len(reply), 7):  # far slower than the deadline allows
                    conn.sendall(reply[k:k + 7])
                    time.sleep(0.3)
            else:
                conn.sendall(reply)
            time.sleep(0.01)
        except OSError:
            pass
        finally:
            conn.close()


ANSWERER = None
status_lines = st.one_of(
    st.sampled_from([b"HTTP/1.1 200 OK", b"HTTP/1.1 503 Busy", b"HTTP/1.0 200 OK", b"HTTP/1.1 400 Bad", b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK",
                     b"HTTP/1.1 999 X", b"HTTP/2 200", b"garbage", b""]),
    st.binary(max_size=40),
)
header_sets = st.lists(st.one_of(
    st.sampled_from([b"content-type: application/json", b"transfer-encoding: chunked", b"connection: close", b"content-length: 0",
                     b"content-length: 99999999999", b"content-length: -5", b"content-length: x"]),
    st.integers(0, 3000).map(lambda n: b"content-length: %d" % n),
    st.binary(max_size=60),
), max_size=6)
body_parts = st.one_of(
    st.builds(lambda rid, extra: json_bytes(dict(text="", meta_info=dict(id=rid, prompt_tokens=3), extra=extra)), st.sampled_from(["r", "other", 5]), json_values),
    json_values.map(json_bytes),
    st.builds(lambda n: b"[" * n + b"]" * n, st.integers(1, 20000)),
    st.builds(lambda chunks: b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n", st.lists(st.binary(max_size=50), max_size=5)),
    st.binary(max_size=300),
)
answers = st.tuples(status_lines, header_sets, body_parts, st.integers(0, 19))


def check_answers(case):
    global ANSWERER
    count("answers")
    status, headers, body, mode = case
    if ANSWERER is None:
        ANSWERER = Answerer()
    reply = status + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body
    ANSWERER.reply, ANSWERER.slow = reply, mode == 0
    server = send.Server(ANSWERER.url, 1.0)
    started = time.monotonic()
    try:
        code, payload = server.request("POST", "/generate", dict(input_ids=[1, 2, 3], rid="r"))
    except (OSError, send.http.client.HTTPException) as exc:
        send.error_text("%s: %s" % (type(exc).__name__, exc))
    else:
        assert isinstance(code, int)
        why = send.answer_problem("r", code, payload)
        assert why is None or isinstance(why, str)
        if why is None:
            assert isinstance(payload, dict) and payload["meta_info"].get("id", "r") == "r"
        send.error_text(payload)
    took = time.monotonic() - started
    # the deadline, with room for a loaded machine; a slow answer takes many seconds unbounded
    assert took < 1.0 + 3.0, "%.2f s for an exchange with a 1 s deadline" % took


TARGETS = dict(
    conversations=(st.lists(lines, min_size=1, max_size=8), check_conversations),
    records=(st.tuples(st.lists(entries, max_size=10), st.integers(0, 50)), check_records),
    samples=(samples, check_samples),
    answers=(answers, check_answers),
)


def run(name, count_, seed=None):
    strategy, fn = TARGETS[name]
    test = settings(max_examples=count_, deadline=None, database=None, derandomize=seed is None,
                    suppress_health_check=list(HealthCheck))(given(strategy)(fn))
    if seed is not None:
        test = fixed_seed(seed)(test)
    try:
        test()
    except Exception as exc:  # the shrunk counterexample, as Hypothesis reports it
        inner = "".join("\n  %s: %s" % (type(e).__name__, e) for e in getattr(exc, "exceptions", ()))
        return "%s: %s: %s%s" % (name, type(exc).__name__, exc, inner)
    return None


def main():
    minutes = float(os.environ.get("SEND_FUZZ_MINUTES", "0") or 0)
    names = [n for n in os.environ.get("SEND_FUZZ_TARGETS", ",".join(TARGETS)).split(",") if n]
    failures = []
    for name in names:
        started = time.monotonic()
        problems = 0
        if not minutes:
            problem = run(name, 40)
            problems += bool(problem)
            if problem:
                failures.append(problem)
        else:
            rounds = 0
            while time.monotonic() - started < minutes * 60:
                rounds += 1
                problem = run(name, 300, seed=rounds)
                if problem:
                    problems += 1
                    failures.append(problem)
                    print(problem, flush=True)
        print("%s: %.1f min, %d examples, %d failures" % (name, (time.monotonic() - started) / 60, examples.get(name, 0), problems), flush=True)
    for f in failures:
        print("FAILURE " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
