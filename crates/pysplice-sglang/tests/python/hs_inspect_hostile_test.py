#!/usr/bin/env python3
"""Tests of sglang-hs-inspect's reading of hostile samples and folders, without PyTorch.

    python3 crates/pysplice-sglang/tests/python/hs_inspect_hostile_test.py

The checker (crates/pysplice-sglang/python/pysplice_sglang/inspector.py) reads every file within bounds before
torch.load sees it; these tests give that reader archives written by hand as torch.save lays
them out (crates/pysplice-sglang/tests/python/hs_inspect_samples.py) and run the whole command on folders of them, with a
stand-in for the torch.load step (`Trusting`), in a child process with a time limit: a sample
that hangs, blows the memory or crashes the reader fails its test. crates/pysplice-sglang/tests/python/hs_inspect_test.py
runs the same hostile files through the built command with PyTorch.
"""

import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import hs_inspect_samples as S  # noqa: E402

H = S.checker()
RECORD = ".hs_send_record.jsonl"  # sglang-hs-send's record, by default in its first --dump-dir

# The command in a child process, torch.load replaced by nothing (the reader's verdict stands).
RUN = """
import sys
sys.path.insert(0, %r)
import hs_inspect_samples as S

class Trusting:
    def confirm(self, fd, path, sample):
        pass

h = S.checker()
try:
    status = h.main(sys.argv[2:], reader=Trusting())
finally:
    # VmHWM: this process's own peak (ru_maxrss keeps the parent's across exec)
    with open("/proc/self/status") as mine, open(sys.argv[1], "w") as f:
        f.write([line.split()[1] for line in mine if line.startswith("VmHWM:")][0])
sys.exit(status)
""" % HERE


def run(*args, timeout=60):
    """(exit status, stdout bytes, stderr bytes, peak RSS in MiB) of the command, in a child
    process that is killed after `timeout` seconds."""
    with tempfile.NamedTemporaryFile("r") as peak:
        p = subprocess.run([sys.executable, "-I", "-c", RUN, peak.name] + list(args), capture_output=True, timeout=timeout)
        kib = peak.read().strip()
    return p.returncode, p.stdout, p.stderr, int(kib or 0) / 1024.0


def run_json(*args, timeout=60):
    code, out, err, _ = run("--json", *args, timeout=timeout)
    return code, json.loads(out.decode("ascii")), err


def read(path):
    """What the reader makes of the file: (tokens, facts), or the SampleError."""
    fd = H.open_regular(path)
    try:
        return H.facts(H.read_sample(fd, os.fstat(fd).st_size))
    finally:
        os.close(fd)


def shared_bomb(levels):
    """`a = [a, a]`, `levels` times over: `levels` lists in data.pkl, 2**levels values in print."""
    a = [1]
    for _ in range(levels):
        a = [a, a]
    return a


class HostileSamples(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = os.path.join(self.tmp.name, "dump")
        os.makedirs(self.dir)

    def tearDown(self):
        self.tmp.cleanup()

    def put(self, name, data):
        return S.write(os.path.join(self.dir, name), data)

    def refused(self, name, data, kind):
        """The file is refused by the reader with `kind`, and named by the command (exit 1)."""
        path = self.put(name, data)
        with self.assertRaises(H.SampleError) as caught:
            read(path)
        self.assertEqual(caught.exception.kind, kind, str(caught.exception))
        code, report, _err = run_json(self.dir)
        self.assertEqual(code, 1)
        self.assertEqual([(u["file"], u["kind"]) for u in report["unreadable"]], [(path, kind)])
        return caught.exception

    # ---- the clean case: what the dump writes is read, counted and agreed

    def test_samples_as_the_dump_writes_them_agree(self):
        for i, n in enumerate((5, 9, 20)):
            self.put("data_%d.ckpt" % i, S.sample_bytes(S.sample(tokens=n)))
        self.put("rows_0/e.ckpt.partial", S.sample_bytes(S.sample(tokens=4, prefix_len=3)))
        code, r, _ = run_json(self.dir)
        self.assertEqual(code, 0, r)
        self.assertEqual((r["complete"], r["partial"], r["tokens"]), (3, 1, dict(complete=34, partial=4)))
        self.assertEqual(r["agreed"]["aux_layers"], [2, 4, 5])
        self.assertEqual(r["agreed"]["dtype"], "bfloat16")
        self.assertEqual(r["agreed"]["aux_width"], 24)
        self.assertEqual(r["bytes"], sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(self.dir) for f in fs))

    # ---- provenance: scalars and flat lists only, and nothing that expands when printed

    def test_a_provenance_of_shared_references_is_refused_at_once(self):
        # 1 KB in data.pkl, 2**60 values in str() or json.dumps of a value the checker compares
        # and prints: the old checker never ended
        data = S.sample_bytes(S.sample(prov=S.provenance(sglang_version=shared_bomb(60))))
        self.assertLess(len(data), 4096)
        started = time.monotonic()
        self.refused("bomb.ckpt", data, "pickle")
        self.assertLess(time.monotonic() - started, 30)

    def test_shared_references_elsewhere_in_the_sample_are_refused_too(self):
        self.refused("bomb.ckpt", S.sample_bytes(S.sample(extra=shared_bomb(40))), "pickle")

    def test_a_value_that_contains_itself_is_refused(self):
        loop = [1]
        loop.append(loop)
        self.refused("loop.ckpt", S.sample_bytes(S.sample(prov=S.provenance(aux_layers=loop))), "pickle")

    def test_deeply_nested_provenance_is_refused_without_a_traceback(self):
        deep = S.Raw(b"]" * 5000 + b"a" * 4999)  # 5,000 lists, each inside the one before
        self.refused("deep.ckpt", S.sample_bytes(S.sample(prov=S.provenance(aux_layers=deep))), "pickle")
        code, out, err, _ = run(self.dir)
        self.assertNotIn(b"Traceback", err)
        self.assertIn(b"UNREADABLE", out)

    def test_provenance_values_must_be_scalars_or_flat_lists(self):
        cases = dict(
            nested=[1, [2]],
            tensor=S.T("LongStorage", (3,)),
            mapping=dict(a=1),
            pair=(1, 2),
            long_text="x" * (H.MAX_TEXT + 1),
            long_list=list(range(H.MAX_LIST + 1)),
            not_finite=float("inf"),
        )
        for name, value in cases.items():
            with self.subTest(name):
                err = self.refused("%s.ckpt" % name, S.sample_bytes(S.sample(prov=S.provenance(aux_layers=value))), "provenance")
                self.assertIn('"aux_layers"', str(err))
                os.unlink(os.path.join(self.dir, "%s.ckpt" % name))
        # what the dump writes passes: None, bool, int, float, str, flat lists of them
        ok = S.provenance(a=None, b=True, c=-3, d=0.5, e="s", f=[1, None, "x", 2.5])
        self.assertEqual(read(self.put("ok.ckpt", S.sample_bytes(S.sample(prov=ok))))[0], 5)

    def test_a_provenance_that_is_not_a_dict_is_refused(self):
        self.refused("p.ckpt", S.sample_bytes(S.sample(prov="x")), "sample")

    def test_too_many_or_too_long_provenance_keys_are_refused(self):
        many = dict(("k%d" % i, i) for i in range(H.MAX_KEYS + 1))
        self.refused("many.ckpt", S.sample_bytes(S.sample(prov=many)), "provenance")
        os.unlink(os.path.join(self.dir, "many.ckpt"))
        self.refused("long.ckpt", S.sample_bytes(S.sample(prov={"k" * (H.MAX_KEY + 1): 1})), "provenance")

    # ---- the archive: torch.save's layout, stored, within bounds, checked before any read

    def test_a_compressed_data_pkl_is_refused_before_it_is_inflated(self):
        # a small file whose data.pkl inflates to 64 MiB (the same with 4 GiB: it is never
        # inflated); the command's memory stays far below what inflating would take
        big = b"\x80\x02X" + (64 << 20).to_bytes(4, "little") + b"a" * (64 << 20) + b"."
        data = S.zip_bytes([("a/data.pkl", big), ("a/version", b"3\n")], dict({"a/data.pkl": dict(deflate=True)}))
        self.assertLess(len(data), 1 << 20)
        self.refused("zip.ckpt", data, "archive")
        _code, _out, _err, peak = run(self.dir)
        self.assertLess(peak, 60, "%.0f MiB" % peak)

    def test_an_oversized_data_pkl_is_refused_unread(self):
        big = b"\x80\x02X" + (2 << 20).to_bytes(4, "little") + b"a" * (2 << 20) + b"."
        self.refused("big.ckpt", S.zip_bytes([("a/data.pkl", big)]), "archive")

    def test_compressed_or_outsized_storages_are_refused(self):
        s = S.sample()
        data = S.sample_bytes(s, options={"archive/data/0": dict(deflate=True)})
        self.refused("c.ckpt", data, "archive")
        os.unlink(os.path.join(self.dir, "c.ckpt"))
        # an entry that claims 4 GiB in a small file
        self.refused("o.ckpt", S.sample_bytes(s, options={"archive/data/2": dict(size=0xFFFFFFF0)}), "archive")

    def test_a_sample_declaring_two_to_the_36_ids_is_refused_by_name(self):
        # the old checker fell back to a whole load and raised MemoryError
        s = S.sample(input_ids=S.T("LongStorage", (1 << 36,), data=b"\0" * 40, numel=1 << 36))
        s["hidden_state"] = S.T("BFloat16Storage", (1, 1 << 36, 8), data=b"\0" * 16, numel=1 << 39)
        err = self.refused("ids.ckpt", S.sample_bytes(s), "tensor")
        self.assertIn("storage", str(err))

    def test_a_tensor_reaching_past_its_storage_is_refused(self):
        s = S.sample(input_ids=S.T("LongStorage", (5,), stride=(9,)))
        self.refused("t.ckpt", S.sample_bytes(s), "tensor")

    def test_archives_torch_save_never_writes_are_refused(self):
        good = S.sample_bytes(S.sample())
        pkl = S.Pickler().dumps(S.sample())
        cases = dict(
            empty=b"",
            garbage=b"not a torch file" * 10,
            legacy=b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.",
            truncated=good[:len(good) // 2],
            no_end=good[:-22],
            duplicate=S.zip_bytes([("a/data.pkl", pkl), ("a/data.pkl", pkl)]),
            two_folders=S.zip_bytes([("a/data.pkl", pkl), ("b/version", b"3")]),
            encrypted=S.zip_bytes([("a/data.pkl", pkl)], {"a/data.pkl": dict(flags=0x0801)}),
            bad_crc=S.zip_bytes([("a/data.pkl", pkl)], {"a/data.pkl": dict(crc=1)}),
            renamed_local=S.zip_bytes([("a/data.pkl", pkl)], {"a/data.pkl": dict(name="a/data.pkm")}),
            no_pickle=S.zip_bytes([("a/version", b"3")]),
            missing_storage=S.zip_bytes([("a/data.pkl", pkl)]),
            big_endian=S.sample_bytes(S.sample(), byteorder=b"big"),
        )
        for name, data in cases.items():
            with self.subTest(name):
                path = self.put("%s.ckpt" % name, data)
                with self.assertRaises(H.SampleError) as caught:
                    read(path)
                self.assertIn(caught.exception.kind, ("archive", "tensor"), "%s: %s" % (name, caught.exception))
        code, r, err = run_json(self.dir)
        self.assertEqual((code, len(r["unreadable"])), (1, len(cases)), err)

    def test_pickles_torch_save_never_writes_are_refused(self):
        base = lambda body: S.zip_bytes([("a/data.pkl", b"\x80\x02" + body)])  # noqa: E731
        cases = dict(
            os_system=base(b"cos\nsystem\nX\x04\x00\x00\x00trueR."),
            builtins_eval=base(b"cbuiltins\neval\nX\x01\x00\x00\x001\x85R."),
            unknown_op=base(b"I1\n."),
            no_stop=base(b"}"),
            pop_empty=base(b"a."),
            big_int=base(b"\x8a\x09" + b"\xff" * 9 + b"."),
            bad_utf8=base(b"X\x01\x00\x00\x00\xff."),
            memo_miss=base(b"h\x07."),
            list_key=base(b"}(]Nu."),
            many_ops=base(b"N" * 70000 + b"."),
            deep=base(b"]" * 40 + b"a" * 39 + b"."),
        )
        witness = os.path.join(self.tmp.name, "ran")
        cases["os_system"] = base(b"cos\nsystem\nX" + len("touch " + witness).to_bytes(4, "little") + ("touch " + witness).encode() + b"\x85R.")
        for name, data in cases.items():
            with self.subTest(name):
                path = self.put("%s.ckpt" % name, data)
                with self.assertRaises(H.SampleError) as caught:
                    read(path)
                self.assertEqual(caught.exception.kind, "pickle", "%s: %s" % (name, caught.exception))
        code, r, _ = run_json(self.dir)
        self.assertEqual((code, len(r["unreadable"])), (1, len(cases)))
        self.assertFalse(os.path.exists(witness), "data.pkl ran a command")

    def test_a_sample_without_its_tensors_is_named(self):
        self.refused("n.ckpt", S.sample_bytes(S.sample(hidden_state=None)), "sample")
        os.unlink(os.path.join(self.dir, "n.ckpt"))
        self.refused("s.ckpt", S.sample_bytes(S.sample(hidden_state="text")), "sample")
        os.unlink(os.path.join(self.dir, "s.ckpt"))
        self.refused("a.ckpt", S.sample_bytes(S.sample(aux_hidden_state=S.T("BFloat16Storage", (1, 4, 24)))), "sample")
        os.unlink(os.path.join(self.dir, "a.ckpt"))
        self.refused("l.ckpt", S.sample_bytes(S.sample(layers_to_capture=["2"])), "sample")

    # ---- ownership: the sender's record says which samples it made and masked

    def owned_sample(self, name, ids, rid, mask=None, partial=False):
        """A sample of these ids and rid, its loss_mask `mask` (all ones, as the dump writes it)."""
        n = len(ids)
        mask = [1] * n if mask is None else mask
        value = S.sample(tokens=n, rid=rid, input_ids=S.T("LongStorage", (n,), data=struct.pack("<%dq" % n, *ids)),
                         loss_mask=S.T("LongStorage", (n,), data=struct.pack("<%dq" % n, *mask)))
        return self.put(name + (".ckpt.partial" if partial else ".ckpt"), S.sample_bytes(value))

    def sent(self, rid, ids, runs):
        digest = hashlib.sha256(struct.pack("<%dq" % len(ids), *ids)).hexdigest()
        return json.dumps(dict(event="sent", rid=rid, line=1, tokens=len(ids), ids_sha256=digest, mask=runs, time=1.0))

    def test_samples_no_record_owns_or_masks_are_named(self):
        a, b, c = [3, 1, 4, 1, 5], [9, 2, 6, 5], [5, 3, 5, 8, 9, 7]
        good = self.owned_sample("good", a, "a", mask=[0, 0, 1, 1, 1])
        unmasked = self.owned_sample("unmasked", b, "b")  # the sender never set it: all ones
        other = self.owned_sample("other", list(range(8)), "someone-else")  # another client's request
        no_rid = self.owned_sample("no-rid", [7, 7, 7], None)
        wrong = self.owned_sample("wrong", c[:5], "c")  # rid c, other tokens than were sent
        self.owned_sample("cut", [1, 2], "x", partial=True)  # partial: resent by the sender, not checked
        record = [self.sent("a", a, [[2, 5]]), self.sent("b", b, [[1, 3]]), self.sent("c", c, [[0, 6]]),
                  json.dumps(dict(event="masked", rid="a", file="good.ckpt")), "{damaged", "[" * 100000]
        S.write(os.path.join(self.dir, RECORD), ("\n".join(record) + "\n").encode())
        code, r, _ = run_json(self.dir)
        self.assertEqual(code, 1, r)
        own = r["ownership"]
        self.assertEqual((own["checked"], own["records"], own["owned"], own["record_lines_skipped"]),
                         (True, [os.path.join(self.dir, RECORD)], 1, 2))
        self.assertEqual(sorted((n["file"], n["rid"]) for n in own["not_owned"]),
                         sorted([(other, "someone-else"), (no_rid, None), (wrong, "c")]))
        self.assertEqual([(n["file"], n["rid"]) for n in own["mask_not_set"]], [(unmasked, "b")])
        self.assertIn("all ones", own["mask_not_set"][0]["why"])
        self.assertFalse(r["ok"])
        self.assertEqual(r["unreadable"], [])
        code, text, _, _ = run(self.dir)
        self.assertEqual(code, 1)
        text = text.decode()
        for path in (other, no_rid, wrong):
            self.assertIn("NOT OWNED %s: " % path, text)
        self.assertIn("MASK NOT SET %s: rid b: " % unmasked, text)
        self.assertNotIn(good, text)
        # the same record given with --record from elsewhere, the folder's own gone
        elsewhere = os.path.join(self.tmp.name, "sent.jsonl")
        os.rename(os.path.join(self.dir, RECORD), elsewhere)
        code, r, _ = run_json("--record", elsewhere, self.dir)
        self.assertEqual((code, r["ownership"]["records"], len(r["ownership"]["not_owned"])), (1, [elsewhere], 3))
        # only the samples the record owns and masked: OK
        for path in (unmasked, other, no_rid, wrong):
            os.unlink(path)
        code, r, _ = run_json("--record", elsewhere, self.dir)
        self.assertEqual((code, r["ok"], r["ownership"]["owned"]), (0, True, 1), r)

    def test_without_a_record_ownership_is_not_checked_and_not_an_error(self):
        self.owned_sample("other", list(range(8)), "someone-else")
        code, r, _ = run_json(self.dir)
        self.assertEqual((code, r["ok"]), (0, True), r)
        self.assertEqual(r["ownership"], dict(checked=False, records=[], record_lines_skipped=0, owned=0, not_owned=[], mask_not_set=[]))
        code, text, _, _ = run(self.dir)
        self.assertEqual(code, 0)
        self.assertIn(b"ownership: not checked", text)

    def test_a_record_that_is_a_fifo_is_named_without_blocking(self):
        self.owned_sample("a", [1, 2, 3], "a")
        os.mkfifo(os.path.join(self.dir, RECORD))
        code, r, _ = run_json(self.dir, timeout=30)
        self.assertEqual(code, 1)
        self.assertEqual([u["kind"] for u in r["unreadable"]], ["record"])
        code, _out, err, _ = run("--record", os.path.join(self.tmp.name, "missing.jsonl"), self.dir)
        self.assertEqual(code, 2, err)

    # ---- the folder: regular files only, never blocked, every sub-folder listed

    def test_a_fifo_named_like_a_sample_is_skipped_by_name_without_blocking(self):
        fifo = os.path.join(self.dir, "a.ckpt")
        os.mkfifo(fifo)
        self.put("b.ckpt", S.sample_bytes(S.sample()))
        with self.assertRaises(H.SampleError) as caught:
            H.open_regular(fifo)
        self.assertEqual(caught.exception.kind, "not-a-file")
        code, r, _ = run_json(self.dir, timeout=30)
        self.assertEqual(code, 1)
        self.assertEqual([(u["file"], u["kind"]) for u in r["unreadable"]], [(fifo, "not-a-file")])
        self.assertIn("FIFO", r["unreadable"][0]["error"])
        self.assertEqual(r["complete"], 1)

    def test_links_to_devices_and_folders_are_not_read(self):
        os.symlink("/dev/zero", os.path.join(self.dir, "zero.ckpt"))
        os.symlink(self.dir, os.path.join(self.dir, "dir.ckpt.partial"))
        os.symlink("missing", os.path.join(self.dir, "dangling.ckpt"))
        code, r, _ = run_json(self.dir, timeout=30)
        self.assertEqual(code, 1)
        # a link to a folder is a folder of the walk (not followed), never a sample
        got = dict((os.path.basename(u["file"]), u["kind"]) for u in r["unreadable"])
        self.assertEqual(got, {"zero.ckpt": "not-a-file", "dangling.ckpt": "not-a-file"})

    def test_a_folder_nested_fifteen_hundred_deep_is_walked(self):
        # os.walk recursed once per level and ended with a RecursionError past a thousand
        levels, path = [], self.dir
        for _ in range(1500):  # os.makedirs and shutil.rmtree recurse too: one level at a time
            path = os.path.join(path, "a")
            os.mkdir(path)
            levels.append(path)
        try:
            deep = self.put(os.path.relpath(os.path.join(path, "x.ckpt"), self.dir), S.sample_bytes(S.sample()))
            code, r, err = run_json(self.dir)
            self.assertEqual((code, r["complete"]), (0, 1), err)
            self.assertEqual(H.list_samples([self.dir])[0], [(deep, True)])
        finally:
            os.unlink(os.path.join(path, "x.ckpt"))
            for level in reversed(levels):
                os.rmdir(level)

    # ---- --png: a new file only, never through a link, never a sample

    def test_png_is_written_new_with_axes_and_a_title(self):
        for i, n in enumerate((5, 9, 20, 600)):
            self.put("d%d.ckpt" % i, S.sample_bytes(S.sample(tokens=n)))
        png = os.path.join(self.tmp.name, "lengths.png")
        code, r, _ = run_json(self.dir, "--png", png)
        self.assertEqual(code, 0, r)
        self.assertTrue(r["png"]["renderer"])
        width, height, rows = S.decode_png(S.content(png))
        self.assertEqual((width, height), (640, 320))
        # the built-in renderer: drawn without matplotlib; text, axes and bars in their colours
        data = H.png_builtin(H.buckets([5, 9, 20, 600]), 640, 320)
        width, height, rows = S.decode_png(data)
        colours = [set(row[3 * x:3 * x + 3] for x in range(width)) for row in rows]
        self.assertTrue(any(H.INK in c for c in colours[:20]), "no title at the top")
        base = [y for y in range(height) if rows[y].count(H.AXIS) > width // 2]
        self.assertTrue(base, "no x axis")
        left = [x for x in range(width) if sum(1 for row in rows if row[3 * x:3 * x + 3] == H.AXIS) > height // 2]
        self.assertTrue(left, "no y axis")
        self.assertTrue(any(H.INK in colours[y] for y in range(base[-1] + 1, height)), "no tick labels under the axis")
        bars = S.count_runs([any(row[3 * x:3 * x + 3] == H.BAR for row in rows) for x in range(width)])
        self.assertEqual(bars, 4)  # 5, 9, 20, 600: one bar per filled bin

    def test_png_never_replaces_a_file_or_writes_through_a_link(self):
        sample = self.put("a.ckpt", S.sample_bytes(S.sample()))
        before = S.content(sample)
        existing = os.path.join(self.tmp.name, "old.png")
        S.write(existing, b"mine")
        link = os.path.join(self.tmp.name, "link.png")
        os.symlink(sample, link)
        dangling = os.path.join(self.tmp.name, "dangling.png")
        target = os.path.join(self.tmp.name, "created-through-the-link")
        os.symlink(target, dangling)
        for png in (existing, link, dangling, os.path.join(self.tmp.name, "x.ckpt"), sample):
            with self.subTest(png):
                code, out, err, _ = run(self.dir, "--png", png)
                self.assertEqual(code, 2, err)
                self.assertEqual(out, b"")
                self.assertIn(b"--png", err)
        self.assertEqual(S.content(sample), before)
        self.assertEqual(S.content(existing), b"mine")
        self.assertFalse(os.path.lexists(target))
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "x.ckpt")))

    def test_write_new_refuses_a_name_taken_meanwhile(self):
        # the check before the scan is not what protects: the exclusive create is
        path = os.path.join(self.tmp.name, "late.png")
        os.symlink(os.path.join(self.tmp.name, "elsewhere"), path)
        with self.assertRaises(FileExistsError):
            H.write_new(path, b"x")
        self.assertFalse(os.path.lexists(os.path.join(self.tmp.name, "elsewhere")))

    # ---- output: names and values printed escaped

    def test_names_and_values_never_reach_the_terminal_raw(self):
        evil = "evil\x1b]0;PWNED\x07\u202e.ckpt"
        self.put(evil, S.sample_bytes(S.sample(prov=S.provenance(sglang_version="0.5\x1b[2J", pysplice_version="\x1b[31mred\u2066"))))
        self.put("fine.ckpt", S.sample_bytes(S.sample()))
        self.put("fine2.ckpt", S.sample_bytes(S.sample()))
        self.put("bad\x1b[1m.ckpt", b"\x1b[2J not a sample \x9b")
        name = os.fsencode(os.path.join(self.dir, "x")) + b"\xff\x1b.ckpt"
        with open(name, "wb") as f:
            f.write(b"PK\x03\x04 cut")
        code, out, err, _ = run(self.dir)
        self.assertEqual(code, 1)
        for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\u2066"):
            self.assertNotIn(raw.encode("utf-8"), out + err)
        text = out.decode("utf-8")
        self.assertIn("evil\\x1b]0;PWNED\\x07\\u{202e}.ckpt", text)
        self.assertIn("x\\xff\\x1b.ckpt", text)
        self.assertIn("\\x1b[31mred\\u{2066} (1)", text)
        # JSON: escaped as JSON escapes, readable by a strict parser (no lone surrogates)
        code, out, err, _ = run("--json", self.dir)
        self.assertNotIn(b"\x1b", out)
        report = json.loads(out.decode("ascii"))
        self.assertFalse(any("\ud800" <= c <= "\udfff" for c in json.dumps(report, ensure_ascii=False)))
        self.assertIn("0.5\x1b[2J", [o["value"] for m in report["mixed"] for o in m["others"]] + [m["majority"] for m in report["mixed"]])

    def test_argument_errors_are_printed_escaped(self):
        code, out, err, _ = run(os.path.join(self.dir, "no\x1b[2Jsuch"))
        self.assertEqual(code, 2)
        self.assertNotIn(b"\x1b", err)
        self.assertIn(b"no\\x1b[2Jsuch", err)

    # ---- PyTorch: checked once

    def test_without_pytorch_one_line_and_exit_2(self):
        for i in range(3):
            self.put("d%d.ckpt" % i, S.sample_bytes(S.sample()))
        # the checker run as a module of its package, as the command runs it
        package = os.path.join(S.REPO, "crates", "pysplice-sglang", "python")
        hide = ("import sys; sys.path.insert(0, %r); sys.modules['torch'] = None; sys.argv[:1] = ['sglang-hs-inspect']; "
                "import runpy; runpy.run_module('pysplice_sglang.inspector', run_name='__main__')" % package)
        p = subprocess.run([sys.executable, "-I", "-c", hide, self.dir], capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stdout, b"")
        lines = p.stderr.decode().splitlines()
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("PyTorch", lines[0])
        self.assertIn("--python", lines[0])
        # a folder without samples needs no PyTorch
        empty = os.path.join(self.tmp.name, "empty")
        os.makedirs(empty)
        p = subprocess.run([sys.executable, "-I", "-c", hide, "--json", empty], capture_output=True, timeout=60)
        self.assertEqual((p.returncode, json.loads(p.stdout)["complete"]), (1, 0))


if __name__ == "__main__":
    unittest.main(verbosity=2)
