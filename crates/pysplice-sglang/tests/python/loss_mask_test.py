#!/usr/bin/env python3
"""Tests of crates/pysplice-sglang/python/pysplice_sglang/masks.py on a small tokenizer and real chat-template output.

    python3 crates/pysplice-sglang/tests/python/loss_mask_test.py

Needs `transformers` (and so `tokenizers`); no network: the tokenizer is a byte-level BPE
trained here on the test conversations and wrapped in transformers' fast tokenizer with a
chat template, so `apply_chat_template` renders the text as it does for a real model.
Samples are written as torch.save writes them: with torch when it is installed, else by a
small writer of the same archive layout (`write_sample` below, checked against torch's own
reader in sample_torch_test.py, which CI runs with PyTorch).

The expected masks come from a different rule than the script's: SpecForge's own (find each
assistant turn's text with a regular expression between the assistant header and the end of
turn, and take the token counts of the text before its start and its end), with the
end-of-turn texts of SpecForge's own templates (`<|im_end|>\n` for ChatML).
"""

import atexit
import io
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "send"))
# remote code (the tokenizer class loaded from its folder) is copied into a cache of this run's own
MODULES = tempfile.mkdtemp(prefix="loss_mask_modules_")
os.environ["HF_MODULES_CACHE"] = MODULES
atexit.register(shutil.rmtree, MODULES, True)
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import jinja2  # noqa: E402
import python_tokenizer  # noqa: E402
from pysplice_sglang import masks as slm  # noqa: E402

try:
    import torch
except ImportError:  # CI: no torch; the archive writer below stands in
    torch = None

# A ChatML template (as Qwen's, simplified) and one in DeepSeek-V3's shape (BOS in the text,
# no newline after the end of a turn). Written for this test.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
DEEPSEEK = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'system' %}{{ m['content'] }}"
    "{% elif m['role'] == 'user' %}<|User|>{{ m['content'] }}"
    "{% else %}<|Assistant|>{{ m['content'] }}<|eos|>{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|Assistant|>{% endif %}"
)
# No special token between a header and the turn: the space after "assistant:" and the turn's
# first word are one token, which crosses the turn's start (it counts as outside the turn).
PLAIN = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|bos|>", "<|eos|>", "<|User|>", "<|Assistant|>"]

CONVERSATIONS = {
    "single": [
        dict(role="user", content="What is the capital of France?"),
        dict(role="assistant", content="The capital of France is Paris."),
    ],
    "multi": [
        dict(role="system", content="You are a terse assistant."),
        dict(role="user", content="Name a prime number."),
        dict(role="assistant", content="Seven."),
        dict(role="user", content="And an even one?"),
        dict(role="assistant", content="Two, the only even prime.\n\nAnything else?"),
    ],
    "three": [
        dict(role="user", content="Count to three."),
        dict(role="assistant", content="One, two, three."),
        dict(role="user", content="Backwards?"),
        dict(role="assistant", content="Three, two, one."),
        dict(role="user", content="Thanks!"),
        dict(role="assistant", content="You're welcome."),
    ],
}


def make_tokenizer(template, extra=()):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [m["content"] for conv in CONVERSATIONS.values() for m in conv] + ["user assistant system"] + list(extra)
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus * 3, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|bos|>", eos_token="<|eos|>")
    fast.chat_template = template
    return fast


def specforge_style_mask(tokenizer, text, header, end):
    """SpecForge's rule: each match of header(.*?end) is supervised, mapped to tokens by
    the token counts of the text before the match's content and up to its end."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    mask = [0] * len(ids)
    for m in re.finditer(re.escape(header) + r"([\s\S]*?(?:" + re.escape(end) + "|$))", text):
        a = len(tokenizer(text[: m.start(1)], add_special_tokens=False)["input_ids"])
        b = len(tokenizer(text[: m.end(1)], add_special_tokens=False)["input_ids"])
        for t in range(a, min(b, len(ids))):
            mask[t] = 1
    return ids, mask


# ---------------------------------------------------------------------------------------
# Sample files in torch.save's archive layout


def _pickle_sample(fields):
    """data.pkl of a dict of tensors (name -> (storage key, storage type, numel, shape)),
    ints, strs, None and lists of ints, with pickle protocol 2 opcodes as torch.save emits."""
    out = io.BytesIO()
    w = out.write

    def s(text):
        raw = text.encode("utf-8")
        w(b"X" + struct.pack("<I", len(raw)) + raw)

    def i(value):
        w(b"J" + struct.pack("<i", value))

    def tup(values):
        w(b"(")
        for v in values:
            i(v)
        w(b"t")

    w(b"\x80\x02}(")
    for name, value in fields.items():
        s(name)
        if isinstance(value, tuple):
            key, kind, numel, shape = value
            w(b"ctorch._utils\n_rebuild_tensor_v2\n(")
            w(b"(")
            s("storage")
            w(b"ctorch\n%s\n" % kind.encode())
            s(key)
            s("cpu")
            i(numel)
            w(b"tQ")
            i(0)
            tup(shape)
            strides = [1] * len(shape)
            for k in range(len(shape) - 2, -1, -1):
                strides[k] = strides[k + 1] * shape[k + 1]
            tup(strides)
            w(b"\x89ccollections\nOrderedDict\n)Rt")
            w(b"R")
        elif value is None:
            w(b"N")
        elif isinstance(value, int):
            i(value)
        elif isinstance(value, str):
            s(value)
        else:
            w(b"](")
            for v in value:
                i(v)
            w(b"e")
    w(b"u.")
    return out.getvalue()


def write_sample(path, ids, rid, prefix_len=0, hidden=4):
    """A dumped sample: input_ids, loss_mask (ones), a bf16 hidden_state, rid, prefix_len."""
    n = len(ids)
    if torch is not None:
        gen = torch.Generator().manual_seed(n)
        torch.save(
            dict(
                input_ids=torch.tensor(ids, dtype=torch.long),
                loss_mask=torch.ones(n, dtype=torch.long),
                hidden_state=torch.randn(1, n, hidden, generator=gen).to(torch.bfloat16),
                layers_to_capture=None,
                prefix_len=prefix_len,
                rid=rid,
            ),
            path,
        )
        return
    write_sample_without_torch(path, ids, rid, prefix_len, hidden)


def write_sample_without_torch(path, ids, rid, prefix_len=0, hidden=4):
    n = len(ids)
    fields = dict(
        input_ids=("0", "LongStorage", n, [n]),
        loss_mask=("1", "LongStorage", n, [n]),
        hidden_state=("2", "BFloat16Storage", n * hidden, [1, n, hidden]),
        layers_to_capture=None,
        prefix_len=prefix_len,
        rid=rid,
    )
    name = "archive"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(name + "/data.pkl", _pickle_sample(fields))
        zf.writestr(name + "/byteorder", b"little")
        zf.writestr(name + "/data/0", struct.pack("<%dq" % n, *ids))
        zf.writestr(name + "/data/1", struct.pack("<%dq" % n, *([1] * n)))
        zf.writestr(name + "/data/2", bytes((7 * k) % 251 for k in range(2 * n * hidden)))
        zf.writestr(name + "/version", b"3\n")


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def entries(path):
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i.filename) for i in zf.infolist()}


class Args:
    def __init__(self, conversations, paths, include_partial=False, dry_run=False):
        self.conversations = conversations
        self.paths = paths
        self.include_partial = include_partial
        self.dry_run = dry_run


class LossMaskTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="loss_mask_")
        self.dump = os.path.join(self.dir, "dump")
        os.makedirs(self.dump)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write_conversations(self, rids):
        path = os.path.join(self.dir, "sent.jsonl")
        with open(path, "w") as f:
            for rid in rids:
                f.write(json.dumps(dict(rid=rid, messages=CONVERSATIONS[rid])) + "\n")
        return path

    def run_script(self, tokenizer, paths=None, **kw):
        conv = self.write_conversations(CONVERSATIONS)
        err = io.StringIO()
        out = io.StringIO()
        old = sys.stderr, sys.stdout
        sys.stderr, sys.stdout = err, out
        try:
            code = slm.run(Args(conv, paths or [self.dump], **kw), tokenizer)
        finally:
            sys.stderr, sys.stdout = old
        return code, out.getvalue(), err.getvalue()

    def check_template(self, template, header, end):
        tokenizer = make_tokenizer(template)
        expected = {}
        for k, (rid, messages) in enumerate(CONVERSATIONS.items()):
            text = tokenizer.apply_chat_template(messages, tokenize=False)
            ids, mask = specforge_style_mask(tokenizer, text, header, end)
            self.assertEqual(sum(mask) > 0, True)
            expected[rid] = (ids, mask, messages)
            write_sample(os.path.join(self.dump, "data_dp0_pid1_abcd_%08d.ckpt" % k), ids, rid)
        before = {p: entries(os.path.join(self.dump, p)) for p in os.listdir(self.dump)}
        code, out, err = self.run_script(tokenizer)
        self.assertEqual(code, 0, err)
        self.assertIn("set loss_mask in 3 files", out)
        self.assertEqual(sorted(os.listdir(self.dump)), sorted(before), "temporary files left")
        for name in sorted(os.listdir(self.dump)):
            path = os.path.join(self.dump, name)
            sample = slm.Sample(path)
            rid = sample.data["rid"]
            ids, mask, messages = expected[rid]
            self.assertEqual(sample.mask(), mask, rid)
            # what the mask selects is exactly the assistant turns with their end of turn
            chosen = tokenizer.decode([t for t, m in zip(ids, mask) if m])
            self.assertEqual(chosen, "".join(m["content"] + end for m in messages if m["role"] == "assistant"))
            # everything else in the archive is byte for byte the same
            after = entries(path)
            changed = [k for k in after if after[k] != before[name][k]]
            self.assertEqual(changed, [sample.prefix + "data/" + sample.data["loss_mask"].key])
            if torch is not None:
                loaded = torch.load(path, weights_only=True)
                self.assertEqual(loaded["loss_mask"].tolist(), mask)
                self.assertEqual(loaded["input_ids"].tolist(), ids)
        # the multi-turn samples have several supervised runs
        runs = lambda m: sum(1 for a, b in zip([0] + m, m) if b and not a)  # noqa: E731
        self.assertEqual(runs(expected["multi"][1]), 2)
        self.assertEqual(runs(expected["three"][1]), 3)
        # idempotent: a second run sets the same masks
        code, _, err = self.run_script(tokenizer)
        self.assertEqual(code, 0, err)
        return tokenizer, expected

    def test_chatml_multi_turn(self):
        self.check_template(CHATML, "<|im_start|>assistant\n", "<|im_end|>\n")

    def test_deepseek_shape_with_bos_in_the_text(self):
        tokenizer, expected = self.check_template(DEEPSEEK, "<|Assistant|>", "<|eos|>")
        self.assertEqual(expected["single"][0][0], tokenizer.convert_tokens_to_ids("<|bos|>"))
        self.assertEqual(expected["single"][1][0], 0)

    def test_ids_that_do_not_match_leave_the_file_untouched(self):
        tokenizer = make_tokenizer(CHATML)
        text = tokenizer.apply_chat_template(CONVERSATIONS["multi"], tokenize=False)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        bad = os.path.join(self.dump, "data_dp0_pid1_abcd_00000000.ckpt")
        write_sample(bad, ids[:5] + [ids[6]] + ids[6:], "multi")  # one token changed
        other = os.path.join(self.dump, "data_dp0_pid1_abcd_00000001.ckpt")
        write_sample(other, ids, "single")  # the wrong conversation for this rid
        unknown = os.path.join(self.dump, "data_dp0_pid1_abcd_00000002.ckpt")
        write_sample(unknown, ids, "never-sent")
        before = {p: read_bytes(p) for p in (bad, other, unknown)}
        code, out, err = self.run_script(tokenizer)
        self.assertEqual(code, 1)
        self.assertIn("set loss_mask in 0 files", out)
        self.assertIn("%s: left unchanged: the conversation's tokens differ from the sample's input_ids" % bad, err)
        self.assertIn("first difference at position 5", err)
        self.assertIn("%s: left unchanged: the conversation's tokens differ" % other, err)
        self.assertIn("%s: left unchanged: rid 'never-sent' is not in the conversations" % unknown, err)
        for p, data in before.items():
            self.assertEqual(read_bytes(p), data, p)
        self.assertEqual(len(os.listdir(self.dump)), 3)

    def test_partial_samples_only_on_request(self):
        tokenizer = make_tokenizer(CHATML)
        text = tokenizer.apply_chat_template(CONVERSATIONS["multi"], tokenize=False)
        ids, mask = specforge_style_mask(tokenizer, text, "<|im_start|>assistant\n", "<|im_end|>\n")
        k = 9
        path = os.path.join(self.dump, "data_dp0_pid1_abcd_00000000.ckpt.partial")
        write_sample(path, ids[k:], "multi", prefix_len=k)
        before = read_bytes(path)
        code, out, _ = self.run_script(tokenizer)
        self.assertEqual((code, read_bytes(path)), (0, before))
        self.assertIn("in 0 files", out)
        code, out, err = self.run_script(tokenizer, include_partial=True)
        self.assertEqual(code, 0, err)
        self.assertEqual(slm.Sample(path).mask(), mask[k:])

    def test_dry_run_writes_nothing(self):
        tokenizer = make_tokenizer(CHATML)
        text = tokenizer.apply_chat_template(CONVERSATIONS["single"], tokenize=False)
        path = os.path.join(self.dump, "a.ckpt")
        write_sample(path, tokenizer(text, add_special_tokens=False)["input_ids"], "single")
        before = read_bytes(path)
        code, out, _ = self.run_script(tokenizer, dry_run=True)
        self.assertEqual((code, read_bytes(path)), (0, before))
        self.assertIn("would set loss_mask in 1 files", out)

    def test_conversations_need_rids(self):
        path = os.path.join(self.dir, "bad.jsonl")
        with open(path, "w") as f:
            f.write(json.dumps(dict(messages=CONVERSATIONS["single"])) + "\n")
        with self.assertRaisesRegex(slm.MaskError, 'bad.jsonl:1: no "rid"'):
            slm.read_conversations(path)

    def test_template_that_rewrites_history_is_refused(self):
        # drops earlier assistant turns once a later one exists: no turn-by-turn prefix
        template = (
            "{% for m in messages %}{% if m['role'] != 'assistant' or loop.last %}"
            "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endif %}{% endfor %}"
        )
        tokenizer = make_tokenizer(template)
        with self.assertRaisesRegex(slm.MaskError, "does not render turn 2 as a continuation"):
            slm.assistant_spans(tokenizer, CONVERSATIONS["multi"])

    def test_a_killed_writers_temporary_does_not_block_the_next(self):
        # a writer killed between its copy and the rename leaves its temporary; the next
        # write of that sample removes it (its process is gone) and keeps a live one's
        path = os.path.join(self.dump, "data_dp0_pid1_abcd_00000000.ckpt")
        write_sample(path, [5, 6, 7, 8], "r")
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        host = socket.gethostname().replace("/", "_")
        stale = os.path.join(self.dump, ".%s.mask.%d.0badcafe.%s.tmp" % (os.path.basename(path), gone.pid, host))
        live = os.path.join(self.dump, ".%s.mask.%d.0badcafe.%s.tmp" % (os.path.basename(path), os.getpid(), host))
        other_host = os.path.join(self.dump, ".%s.mask.%d.0badcafe.elsewhere.tmp" % (os.path.basename(path), gone.pid))
        for p in (stale, live, other_host):
            with open(p, "wb") as f:
                f.write(b"half a copy")
        slm.Sample(path).write_mask([0, 1, 1, 0])
        self.assertEqual(slm.Sample(path).mask(), [0, 1, 1, 0])
        self.assertFalse(os.path.exists(stale))
        self.assertTrue(os.path.exists(live) and os.path.exists(other_host))
        self.assertEqual(len(os.listdir(self.dump)), 3, os.listdir(self.dump))


class TokenizerKindsTest(unittest.TestCase):
    """Python tokenizer classes and remote-code ones give no offsets: the mask is built from
    the token counts of the text before each turn boundary, and must be the fast one's."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="loss_mask_kinds_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def kinds(self, template):
        # trained on the rendered text too: tokens may then span a header and a turn's start
        rendered = [jinja2.Template(template).render(messages=m, add_generation_prompt=False) for m in CONVERSATIONS.values()]
        fast = make_tokenizer(template, rendered)
        slow = python_tokenizer.python_twin(fast, os.path.join(self.dir, "python"))
        folder = python_tokenizer.save_remote(fast, os.path.join(self.dir, "remote-%d" % len(os.listdir(self.dir))))
        remote = slm.load_tokenizer(folder, trust_remote_code=True)
        self.assertTrue(fast.is_fast)
        for tok in (slow, remote):
            self.assertFalse(tok.is_fast)
            self.assertIsNone(tok("a b", return_offsets_mapping=True).get("offset_mapping"), "this class gives offsets")
        self.assertNotEqual(type(remote), type(slow), "the remote class is loaded from its folder")
        return fast, slow, remote

    def check_same_masks(self, template):
        fast, slow, remote = self.kinds(template)
        crossing = 0
        for rid, messages in CONVERSATIONS.items():
            text, spans = slm.assistant_spans(fast, messages)
            for special in (False, True):
                ids, mask = slm.tokens_and_mask(fast, text, spans, special)
                self.assertGreater(sum(mask), 0)
                for tok in (slow, remote):
                    self.assertEqual(slm.assistant_spans(tok, messages), (text, spans))
                    self.assertEqual(slm.tokens_and_mask(tok, text, spans, special), (ids, mask), (rid, special, type(tok)))
                    self.assertEqual(slm.loss_mask(tok, messages, ids), mask)
            plain = fast(text, add_special_tokens=False)["input_ids"]
            for a, _ in spans:
                head = fast(text[:a], add_special_tokens=False)["input_ids"]
                crossing += plain[: len(head)] != head
        return crossing

    def test_chatml(self):
        self.assertEqual(self.check_same_masks(CHATML), 0)

    def test_deepseek_shape_with_bos_in_the_text(self):
        self.check_same_masks(DEEPSEEK)

    def test_a_token_across_the_turn_start(self):
        # the mask by prefixes meets tokens that cross a boundary here, and still agrees
        self.assertGreater(self.check_same_masks(PLAIN), 0)

    def test_the_script_sets_the_fast_masks_with_a_remote_code_tokenizer(self):
        fast, _, remote = self.kinds(CHATML)
        dump = os.path.join(self.dir, "dump")
        os.makedirs(dump)
        want = {}
        for k, (rid, messages) in enumerate(CONVERSATIONS.items()):
            text, spans = slm.assistant_spans(fast, messages)
            want[rid] = slm.tokens_and_mask(fast, text, spans)
            write_sample(os.path.join(dump, "data_dp0_pid1_abcd_%08d.ckpt" % k), want[rid][0], rid)
        conv = os.path.join(self.dir, "sent.jsonl")
        with open(conv, "w") as f:
            for rid, messages in CONVERSATIONS.items():
                f.write(json.dumps(dict(rid=rid, messages=messages)) + "\n")
        folder = remote.name_or_path
        script = os.path.join(HERE, "..", "..", "python", "pysplice_sglang", "masks.py")
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        base = [sys.executable, script, "--conversations", conv, "--tokenizer", folder, dump]
        refused = subprocess.run(base, capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(refused.returncode, 2)
        self.assertEqual(len(refused.stderr.strip().splitlines()), 1, refused.stderr)
        self.assertIn("--trust-remote-code", refused.stderr)
        for name in os.listdir(dump):
            self.assertEqual(slm.Sample(os.path.join(dump, name)).mask(), [1] * len(slm.Sample(os.path.join(dump, name)).mask()))
        done = subprocess.run(base + ["--trust-remote-code"], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        for name in os.listdir(dump):
            sample = slm.Sample(os.path.join(dump, name))
            self.assertEqual(sample.mask(), want[sample.data["rid"]][1])

    def test_remote_code_only_when_asked(self):
        fast = make_tokenizer(CHATML)
        folder = python_tokenizer.save_remote(fast, os.path.join(self.dir, "remote"))
        with self.assertRaisesRegex(slm.TokenizerError, "pass --trust-remote-code to run it"):
            slm.load_tokenizer(folder)
        with self.assertRaisesRegex(slm.TokenizerError, "cannot load the tokenizer"):
            slm.load_tokenizer(os.path.join(self.dir, "no-such-folder"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
