#!/usr/bin/env python3
"""sglang-hs-send against hostile input files, records, samples and servers, and the start of
both Python commands (sglang-hs-send, sglang-hs-inspect) isolated from the working folder.

    python3 crates/pysplice-sglang/tests/python/send_test.py            # unittest; needs transformers and tokenizers

Runs the real program ($SGLANG_HS_SEND, else target/{debug,release}/sglang-hs-send; for the
start, target/debug/sglang-hs-inspect beside it) with this interpreter as --python, against the
stand-in server of crates/pysplice-sglang/tests/python/send/ or servers written here that misbehave on purpose. Samples are
written in torch.save's archive layout without PyTorch. Each test names the defect it guards:
none may crash the sender (no traceback), hang it, make it hold what it was sent, or let it
report a sample, answer or record line as what it is not. The check that the sample reader
reads what torch.save writes as torch.load does needs PyTorch: sample_torch_test.py.
"""

import fcntl
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import zipfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path[:0] = [os.path.join(HERE, "send"), os.path.join(REPO, "crates", "pysplice-sglang", "python")]

from harness import send_program, start_server  # noqa: E402
from pysplice_sglang import masks as slm  # noqa: E402
import tiny_tokenizer  # noqa: E402

MODULES = ("types", "json", "torch", "sitecustomize", "re", "collections")


def inspect_program():
    return os.path.join(os.path.dirname(send_program()), "sglang-hs-inspect")


# ---------------------------------------------------------------------------------------
# Samples in torch.save's layout, without PyTorch


def _s(text):
    raw = text.encode("utf-8")
    return b"X" + struct.pack("<I", len(raw)) + raw


def _i(value):
    return b"J" + struct.pack("<i", value)


def tensor(key, numel, shape, kind="LongStorage"):
    """The pickle of torch._utils._rebuild_tensor_v2 over storage `key`."""
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    out = b"ctorch._utils\n_rebuild_tensor_v2\n((" + _s("storage") + b"ctorch\n%s\n" % kind.encode()
    out += _s(key) + _s("cpu") + (b"\x8a\x08" + struct.pack("<q", numel)) + b"tQ" + _i(0)
    out += b"(" + b"".join(b"\x8a\x08" + struct.pack("<q", d) for d in shape) + b"t"
    out += b"(" + b"".join(_i(d) for d in strides) + b"t"
    out += b"\x89ccollections\nOrderedDict\n)RtR"
    return out


def pickle_dict(fields):
    """data.pkl of a dict: values are bytes (a pickled value as it is), str, int or None."""
    out = b"\x80\x02}("
    for name, value in fields.items():
        out += _s(name)
        if isinstance(value, bytes):
            out += value
        elif value is None:
            out += b"N"
        elif isinstance(value, int):
            out += _i(value)
        else:
            out += _s(value)
    return out + b"u."


def write_archive(path, entries, deflate=()):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, data in entries.items():
            zf.writestr("archive/" + name, data, zipfile.ZIP_DEFLATED if name in deflate else zipfile.ZIP_STORED)


def write_sample(path, ids, rid, pkl=None, **extra):
    n = len(ids)
    fields = dict(input_ids=tensor("0", n, [n]), loss_mask=tensor("1", n, [n]), prefix_len=0, rid=rid)
    fields.update(extra)
    write_archive(path, {
        "data.pkl": pkl if pkl is not None else pickle_dict(fields),
        "byteorder": b"little",
        "data/0": struct.pack("<%dq" % n, *ids),
        "data/1": struct.pack("<%dq" % n, *([1] * n)),
        "version": b"3\n",
    })


def shared_list(depth):
    """The pickle of a = [a, a] `depth` times over: a few bytes a level, 2**depth in str()."""
    out = b"]"
    for k in range(depth):
        out = b"](" + out + b"r" + struct.pack("<I", k) + b"j" + struct.pack("<I", k) + b"e"
    return out


def sent_line(rid, ids, mask_runs, line=1):
    import hashlib

    digest = hashlib.sha256(struct.pack("<%dq" % len(ids), *ids)).hexdigest()
    return json.dumps(dict(event="sent", rid=rid, line=line, tokens=len(ids), ids_sha256=digest, mask=mask_runs, time=1.0))


# ---------------------------------------------------------------------------------------
# Servers that misbehave


class RawServer:
    """A TCP server whose `handle(conn)` answers each connection its own way (one thread each)."""

    def __init__(self, handle):
        self.handle = handle
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.requests = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.requests += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        try:
            head, body = read_request(conn)
            if head.startswith(b"GET "):  # the sender's preflight (/health): this server is up
                answer(conn, 200, b"{}")
                return
            self.handle(conn, self, body)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stop.set()
        self.sock.close()


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        part = conn.recv(65536)
        if not part:
            return b"", b""
        data += part
    head, body = data.split(b"\r\n\r\n", 1)
    m = re.search(rb"content-length:\s*(\d+)", head, re.I)
    n = int(m.group(1)) if m else 0
    while len(body) < n:
        part = conn.recv(65536)
        if not part:
            break
        body += part
    return head, body


def answer(conn, status, body, ctype=b"application/json", length=None):
    length = len(body) if length is None else length
    conn.sendall(b"HTTP/1.1 %d X\r\ncontent-type: %s\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % (status, ctype, length) + body)


class SendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.shared = tempfile.mkdtemp(prefix="py-send-test-")
        cls.tok = os.path.join(cls.shared, "tok")
        tiny_tokenizer.make(cls.tok)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shared, ignore_errors=True)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="case-", dir=self.shared)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def server(self, *args):
        proc, url = start_server("--log", self.path("accepted.jsonl"), *args)
        self.procs.append(proc)
        return url

    def accepted(self):
        try:
            with open(self.path("accepted.jsonl")) as f:
                # Only whole lines: a stand-in may be mid-write while a test polls.
                return [json.loads(line)["rid"] for line in f if line.endswith("\n")]
        except FileNotFoundError:
            return []

    def conversations(self, lines, name="conv.jsonl"):
        path = self.path(name)
        with open(path, "wb") as f:
            for line in lines:
                f.write((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n")
        return path

    def good(self, rid, words="hello there"):
        return dict(rid=rid, messages=[dict(role="user", content=words), dict(role="assistant", content="fine " + words)])

    def send(self, *args, timeout=120, cwd=None, env=None, program=None, wrap_rss=False):
        cmd = [program or send_program(), "--python", sys.executable, "--progress", "none", *args]
        if wrap_rss:  # the sender's peak memory, measured by a parent of its own
            cmd = [sys.executable, "-c", "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
                   "sys.stderr.write('maxrss_kib=%d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
                   "sys.exit(r.returncode)", *cmd]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd or self.dir, env=env,
                              errors="surrogateescape")
        proc.elapsed = time.monotonic() - t0
        self.assertNotIn("Traceback", proc.stderr, proc.stderr[-3000:])
        return proc

    def run_job(self, conv, url, *extra, **kw):
        return self.send("--conversations", conv, "--tokenizer", self.tok, "--url", url, "--record", self.path("record.jsonl"),
                         "--retries", "0", *extra, **kw)

    def record(self):
        with open(self.path("record.jsonl"), "rb") as f:
            return f.read()

    def sent_rids(self):
        out = []
        for line in self.record().split(b"\n"):
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("event") == "sent":
                out.append(entry["rid"])
        return out

    # --- 1. the start: nothing of the working folder runs

    def plant(self, folder):
        """A module of each common name in `folder` and in its `rel` sub-folder that writes a
        canary when imported."""
        for where in (folder, os.path.join(folder, "rel")):
            os.makedirs(where, exist_ok=True)
            for name in MODULES:
                with open(os.path.join(where, name + ".py"), "w") as f:
                    f.write("open(%r, 'a').write(%r)\n" % (os.path.join(self.dir, "CANARY"), where + "/" + name + "\n"))

    def canary(self):
        p = self.path("CANARY")
        return open(p).read() if os.path.exists(p) else ""

    def test_start_runs_nothing_from_the_working_folder(self):
        work = self.path("work")
        self.plant(work)
        env = dict(os.environ, PYTHONPATH="rel:.:" + os.path.join(REPO, "no-such-folder"))
        for program in (send_program(), inspect_program()):
            proc = self.send("--help", cwd=work, env=env, program=program)
            self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.canary(), "")
        # a real run of each: the sender to a server, the checker on a folder with a sample
        url = self.server()
        conv = self.conversations([self.good("a")])
        proc = self.run_job(conv, url, cwd=work, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.accepted(), ["a"])
        write_sample(os.path.join(work, "s.ckpt"), [1, 2, 3], "a")
        proc = self.send(work, cwd=work, env=env, program=inspect_program())
        self.assertIn(proc.returncode, (0, 1, 2), proc.stderr)
        self.assertEqual(self.canary(), "")

    def test_children_do_not_inherit_relative_pythonpath_entries(self):
        # a sitecustomize.py on an absolute entry runs (the user put it there) and sees the
        # environment the program and its children get: only the absolute entries
        site = self.path("site")
        os.makedirs(site)
        probe = self.path("env.txt")
        with open(os.path.join(site, "sitecustomize.py"), "w") as f:
            f.write("import os; open(%r, 'w').write(os.environ.get('PYTHONPATH', '<unset>'))\n" % probe)
        env = dict(os.environ, PYTHONPATH="rel:%s:.:" % site)
        proc = self.send("--help", env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(probe) as f:
            self.assertEqual(f.read(), site)

    # --- 2. one bad line does not end the run

    def test_bad_lines_are_named_and_skipped_and_the_rest_is_sent(self):
        url = self.server()
        lines = [
            self.good("first"),
            b"[" * 100000 + b"]" * 100000,  # RecursionError in json.loads
            b'{"messages": ' + b"[" * 100000,  # unclosed
            dict(id="s1", conversations=[{"from": ["human"], "value": "hi"}]),  # TypeError
            b'{"messages": [{"role": "user", "content": "\\ud800 lone"}, {"role": "assistant", "content": "x"}]}',
            dict(rid=["a", "list"], messages=self.good("x")["messages"]),
            dict(rid="r" * 600, messages=self.good("x")["messages"]),
            b'{"rid": "num", "messages": [], "n": ' + b"9" * 5000 + b"}",
            b"\xff\xfe not utf-8",
            dict(rid="bad-content", messages=[dict(role="user", content=5)]),
            self.good("last", "goodbye now"),
        ]
        conv = self.conversations(lines)
        proc = self.run_job(conv, url)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(sorted(self.accepted()), ["first", "last"])
        for number in range(2, 11):
            self.assertRegex(proc.stderr, r"conv\.jsonl:%d: skipped" % number)
        self.assertIn("nested more than 64 levels deep", proc.stderr)
        self.assertIn("lone surrogate", proc.stderr)

    def test_a_line_over_64_mib_is_skipped_and_the_rest_sent(self):
        url = self.server()
        conv = self.path("conv.jsonl")
        with open(conv, "wb") as f:
            f.write(json.dumps(self.good("before")).encode() + b"\n")
            f.write(b'{"rid": "long", "pad": "' + b"a" * (64 << 20) + b'"}\n')
            f.write(json.dumps(self.good("after", "more words")).encode() + b"\n")
        proc = self.run_job(conv, url)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("conv.jsonl:2: skipped: a line of more than 67108864 bytes", proc.stderr)
        self.assertEqual(sorted(self.accepted()), ["after", "before"])

    # --- 3. the server: a deadline per exchange, a bounded answer, a validated answer

    def test_a_server_trickling_its_answer_is_cut_at_the_timeout(self):
        def trickle(conn, server, _body):
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n")
            while not server.stop.is_set():
                conn.sendall(b" ")
                time.sleep(0.5)

        srv = RawServer(trickle)
        self.addCleanup(srv.close)
        proc = self.run_job(self.conversations([self.good("slow")]), srv.url, "--timeout", "2", timeout=60)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertLess(proc.elapsed, 30)
        self.assertIn("within --timeout", proc.stderr)
        self.assertEqual(self.sent_rids(), [])

    def test_a_huge_answer_is_not_read_into_memory(self):
        # 512 MiB, which a sender holding the whole answer holds at least twice (bytes, text)
        size = 512 << 20

        def flood(conn, server, _body):
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % size)
            block = b"x" * (1 << 20)
            for _ in range(size >> 20):
                if server.stop.is_set():
                    break
                conn.sendall(block)

        srv = RawServer(flood)
        self.addCleanup(srv.close)
        proc = self.run_job(self.conversations([self.good("big")]), srv.url, "--timeout", "60", timeout=120, wrap_rss=True)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("more than 1048576 bytes", proc.stderr)
        rss = int(re.search(r"maxrss_kib=(\d+)", proc.stderr).group(1))
        self.assertLess(rss, 640 << 10, "peak memory %d KiB" % rss)
        self.assertEqual(self.sent_rids(), [])

    def test_answers_that_are_not_sglangs_are_not_counted_as_sent(self):
        bodies = {
            "html": (b"<html><body>\x1b]0;PWNED\x07 login</body></html>", b"text/html"),
            "other-rid": (json.dumps({"text": "", "meta_info": {"id": "someone-else"}}).encode(), b"application/json"),
            "no-meta": (b"[1, 2, 3]", b"application/json"),
            "deep": (b"[" * 50000 + b"]" * 50000, b"application/json"),
        }

        def odd(conn, server, body):
            rid = json.loads(body)["rid"]
            data, ctype = bodies.get(rid, (json.dumps({"text": "", "meta_info": {"id": rid}}).encode(), b"application/json"))
            answer(conn, 200, data, ctype)

        srv = RawServer(odd)
        self.addCleanup(srv.close)
        conv = self.conversations([self.good(r) for r in ("html", "other-rid", "no-meta", "deep", "fine")])
        proc = self.run_job(conv, srv.url, "--concurrency", "1")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(self.sent_rids(), ["fine"])
        self.assertIn("not JSON", proc.stderr)
        self.assertIn("an answer for rid someone-else", proc.stderr)
        self.assertNotIn("\x1b", proc.stderr)

    def test_a_200_cut_mid_body_is_not_skipped_and_no_sample_is_lost_or_doubled(self):
        # The server did the request and its answer was cut (the connection closed before its
        # Content-Length, or before the last chunk): the sample may be on disk already.
        # "landed", "kept-alive" and "chunked": dumped, then cut; "lost": cut before it was
        # dumped, then answered when sent again. Each ends as one sample, masked, counted sent.
        dump = self.path("dump")
        os.makedirs(dump, mode=0o700)
        tries, lock = dict(), threading.Lock()

        def dumped(rid, ids):
            tmp = os.path.join(dump, ".%s.tmp" % rid)
            write_sample(tmp, ids, rid)
            os.rename(tmp, os.path.join(dump, "data_%s_%d.ckpt" % (rid, tries[rid])))

        def cutting(conn, server, body):
            req = json.loads(body)
            rid, ids = req["rid"], req["input_ids"]
            with lock:
                tries[rid] = tries.get(rid, 0) + 1
                n = tries[rid]
            whole = json.dumps({"text": "", "meta_info": {"id": rid, "prompt_tokens": len(ids)}}).encode()
            if rid == "lost" and n == 1:
                answer(conn, 200, whole[:10], length=len(whole))
                return
            dumped(rid, ids)
            if rid == "landed" and n == 1:
                answer(conn, 200, whole[: len(whole) // 2], length=len(whole))
            elif rid == "kept-alive" and n == 1:  # no "connection: close": the sender read b"" at the cut
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(whole)
                             + whole[:12])
            elif rid == "chunked" and n == 1:
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
                             + b"%x\r\n" % 8 + whole[:8] + b"\r\n")
            else:
                answer(conn, 200, whole)

        srv = RawServer(cutting)
        self.addCleanup(srv.close)
        rids = ("fine", "landed", "lost", "chunked", "kept-alive")
        conv = self.conversations([self.good(r, "words of %s" % r) for r in rids])
        proc = self.run_job(conv, srv.url, "--dump-dir", dump, "--retries", "2", "--concurrency", "1", "--land-grace", "1")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(tries, {"fine": 1, "landed": 1, "lost": 2, "chunked": 1, "kept-alive": 1}, proc.stderr)
        self.assertEqual(sorted(self.sent_rids()), sorted(rids))
        entries = [json.loads(line) for line in self.record().split(b"\n") if line.strip()]
        masks = dict((e["rid"], e["mask"]) for e in entries if e["event"] == "sent")
        samples = sorted(n for n in os.listdir(dump) if n.endswith(".ckpt"))
        self.assertEqual(samples, sorted("data_%s_1.ckpt" % r if r != "lost" else "data_lost_2.ckpt" for r in rids))
        for name in samples:
            sample = slm.Sample(os.path.join(dump, name))
            rid = sample.data["rid"]
            want = [0] * len(sample.mask())
            for a, b in masks[rid]:
                want[a:b] = [1] * (b - a)
            self.assertEqual(sample.mask(), want, name)
            self.assertNotEqual(want, [1] * len(want))
        self.assertIn("5 conversations sent", proc.stdout)
        self.assertIn("5 loss masks set", proc.stdout)

    # --- 4. samples: a bounded reader, each bad one named and skipped

    def masks_only(self, dump, record_lines, **kw):
        with open(os.path.join(dump, ".hs_send_record.jsonl"), "w") as f:
            f.write("".join(line + "\n" for line in record_lines))
        return self.send("--masks-only", "--dump-dir", dump, **kw)

    def dump_with_good_sample(self):
        dump = self.path("dump")
        os.makedirs(dump)
        write_sample(os.path.join(dump, "good.ckpt"), [5, 6, 7, 8], "good")
        return dump, sent_line("good", [5, 6, 7, 8], [[1, 3]])

    def assertGoodMasked(self, dump):
        self.assertEqual(slm.Sample(os.path.join(dump, "good.ckpt")).mask(), [0, 1, 1, 0])

    def test_a_rid_of_shared_references_is_refused(self):
        dump, line = self.dump_with_good_sample()
        n = 3
        fields = dict(input_ids=tensor("0", n, [n]), loss_mask=tensor("1", n, [n]), rid=shared_list(60))
        write_sample(os.path.join(dump, "bomb.ckpt"), [1, 2, 3], None, pkl=pickle_dict(fields))
        self.assertLess(os.path.getsize(os.path.join(dump, "bomb.ckpt")), 4096)
        proc = self.masks_only(dump, [line], timeout=60)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertRegex(proc.stderr, r"bomb\.ckpt: .*shared references")
        self.assertGoodMasked(dump)

    def test_a_data_pkl_that_is_not_a_dict_is_refused(self):
        # found by crates/pysplice-sglang/tests/python/send/fuzz_send.py: a lone integer ended the reader with a TypeError
        dump, line = self.dump_with_good_sample()
        write_sample(os.path.join(dump, "int.ckpt"), [1], None, pkl=b"\x80\x02K\x05.")
        proc = self.masks_only(dump, [line], timeout=60)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertRegex(proc.stderr, r"int\.ckpt: skipped: not a sample: the sample is not a dict")
        self.assertGoodMasked(dump)

    def test_a_sample_declaring_2_36_ids_is_refused_by_its_declared_size(self):
        dump, line = self.dump_with_good_sample()
        n = 1 << 36
        fields = dict(input_ids=tensor("0", n, [n]), loss_mask=tensor("1", n, [n]), rid="huge", prefix_len=0)
        write_sample(os.path.join(dump, "huge.ckpt"), [1], None, pkl=pickle_dict(fields))
        proc = self.masks_only(dump, [line, sent_line("huge", [1], [[0, 1]])], timeout=60)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertRegex(proc.stderr, r"huge\.ckpt: .*declares 68719476736 ids")
        self.assertGoodMasked(dump)

    def test_a_compressed_data_pkl_is_refused_unread(self):
        # 1 GiB of zeros deflate to about 1 MB: inflating them would take the memory
        dump, line = self.dump_with_good_sample()
        path = os.path.join(dump, "zipbomb.ckpt")
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
            info = zipfile.ZipInfo("archive/data.pkl")
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as w:
                zero = bytes(1 << 24)
                for _ in range(64):
                    w.write(zero)
            zf.writestr("archive/byteorder", b"little")
        proc = self.masks_only(dump, [line], timeout=120, wrap_rss=True)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertRegex(proc.stderr, r"zipbomb\.ckpt: .*compressed")
        rss = int(re.search(r"maxrss_kib=(\d+)", proc.stderr).group(1))
        self.assertLess(rss, 256 << 10, "peak memory %d KiB" % rss)
        self.assertGoodMasked(dump)

    def test_fifos_links_and_odd_names_are_skipped_by_name_never_opened(self):
        dump, line = self.dump_with_good_sample()
        os.mkfifo(os.path.join(dump, "fifo.ckpt"))
        os.mkfifo(os.path.join(dump, ".hs_dump_status_1.json"))
        os.symlink(os.path.join(dump, "good.ckpt"), os.path.join(dump, "link.ckpt"))
        write_sample(os.path.join(dump, "evil\x1b]0;PWNED\x07.ckpt"), [1, 2], "evil\x1b[31m")
        proc = self.masks_only(dump, [line], timeout=60)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertRegex(proc.stderr, r"fifo\.ckpt: skipped: a FIFO")
        self.assertRegex(proc.stderr, r"link\.ckpt: skipped: a symbolic link")
        self.assertIn("evil\\x1b]0;PWNED\\x07.ckpt", proc.stderr)
        self.assertNotIn("\x1b", proc.stderr + proc.stdout)
        self.assertGoodMasked(dump)

    def test_a_status_fifo_does_not_hang_the_wait_for_samples(self):
        url = self.server()
        dump = self.path("dump")
        os.makedirs(dump, mode=0o700)
        os.mkfifo(os.path.join(dump, ".hs_dump_status_9.json"))
        conv = self.conversations([self.good("lost")])
        proc = self.run_job(conv, url, "--dump-dir", dump, "--land-grace", "0.5", "--land-timeout", "20", timeout=60)
        # the first sample never lands (no dump writes there): the run stops after the first
        # conversation, naming the folder, without ever opening the FIFO
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("but no sample of it came to %s" % dump, proc.stderr)
        self.assertLess(proc.elapsed, 20)

    # --- 5. one sender per job

    def test_a_second_sender_on_the_same_record_is_refused(self):
        url = self.server()
        conv = self.conversations([self.good("a")])
        with open(self.path("record.jsonl"), "a") as held:
            fcntl.flock(held.fileno(), fcntl.LOCK_EX)
            proc = self.run_job(conv, url)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        said = [line for line in proc.stderr.splitlines() if line.startswith("sglang-hs-send:")]
        self.assertEqual(len(said), 1, proc.stderr)
        self.assertIn("in use by another sglang-hs-send", said[0])
        self.assertEqual(self.accepted(), [])
        # the lock is taken before the tokenizer loads: a tokenizer that cannot load is not
        # what the second sender reports (and a slow one would not delay the refusal)
        no_tokenizer = self.path("not-a-tokenizer")
        os.makedirs(no_tokenizer)
        with open(self.path("record.jsonl"), "a") as held:
            fcntl.flock(held.fileno(), fcntl.LOCK_EX)
            proc = self.send("--conversations", conv, "--tokenizer", no_tokenizer, "--url", url,
                             "--record", self.path("record.jsonl"), "--retries", "0")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("in use by another sglang-hs-send", proc.stderr)
        dump = self.path("dump")
        os.makedirs(dump)
        with open(os.path.join(dump, ".hs_send_record.jsonl"), "a") as held:
            fcntl.flock(held.fileno(), fcntl.LOCK_EX)
            proc = self.send("--masks-only", "--dump-dir", dump)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)

    # --- 6. a record cut mid-line

    def test_a_cut_record_is_repaired_and_masks_only_names_what_it_could_not_mask(self):
        dump, line = self.dump_with_good_sample()
        write_sample(os.path.join(dump, "cut.ckpt"), [1, 2, 3], "cut")
        cut = sent_line("cut", [1, 2, 3], [[0, 3]])
        record = os.path.join(dump, ".hs_send_record.jsonl")
        with open(record, "w") as f:
            f.write(line + "\n" + cut[: len(cut) // 2])
        proc = self.send("--masks-only", "--dump-dir", dump)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertRegex(proc.stderr, r"\.hs_send_record\.jsonl:2: record line skipped: cut short")
        self.assertRegex(proc.stderr, r"cut\.ckpt: loss_mask not set: rid cut is not in the record")
        self.assertGoodMasked(dump)
        with open(record, "rb") as f:
            self.assertTrue(f.read().endswith(b"\n"))

    def test_a_rerun_after_a_cut_record_records_each_conversation_on_a_line_of_its_own(self):
        url = self.server()
        conv = self.conversations([self.good("a"), self.good("b", "other words"), self.good("c", "third one")])
        cut = sent_line("b", [1, 2], [[0, 1]])
        with open(self.path("record.jsonl"), "w") as f:
            f.write(cut[:40])
        proc = self.run_job(conv, url)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(self.sent_rids()), ["a", "b", "c"])
        proc = self.run_job(conv, url)  # the rerun finds all three recorded
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("3 answered in an earlier run", proc.stdout)
        self.assertEqual(sorted(self.accepted()), ["a", "b", "c"])

    # --- 7. the record's file, and printable output

    def test_the_record_is_never_written_through_a_link_or_opened_as_a_fifo(self):
        url = self.server()
        conv = self.conversations([self.good("a")])
        target = self.path("elsewhere.txt")
        with open(target, "w") as f:
            f.write("precious\n")
        os.symlink(target, self.path("record.jsonl"))
        proc = self.run_job(conv, url)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("symbolic link", proc.stderr)
        with open(target) as f:
            self.assertEqual(f.read(), "precious\n")
        os.unlink(self.path("record.jsonl"))
        os.mkfifo(self.path("record.jsonl"))
        proc = self.run_job(conv, url, timeout=60)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("not a regular file", proc.stderr)
        self.assertEqual(self.accepted(), [])

    def test_rids_and_server_text_are_printed_escaped(self):
        url = self.server("--context-length", "8")
        conv = self.conversations([self.good("evil\x1b]0;PWNED\x07\u202e")])
        proc = self.run_job(conv, url)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("evil\\x1b]0;PWNED\\x07\\u{202e}", proc.stderr)
        self.assertNotIn("\x1b", proc.stderr + proc.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
