"""The sample reader that sglang-hs-send and sglang-hs-inspect embed (pysplice_sglang.masks)
against PyTorch itself: files torch.save writes read as torch.load reads them, and a mask the
reader writes read back by torch.load. Needs PyTorch (CI runs it in an SGLang release's venv).

    python3 scripts/python-tests.py ... crates/pysplice-sglang/tests/python --only sample_torch_test.py
"""

import os
import shutil
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from pysplice_sglang import masks as slm  # noqa: E402


class SamplesAgainstTorch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sample-torch-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_samples_written_by_torch_read_as_torch_loads_them(self):
        for n, hidden, rid in ((1, 4, "one"), (37, 8, "r\u00e9-37"), (1000, 16, "x" * 512)):
            path = self.path("t%d.ckpt" % n)
            ids = torch.randint(0, 1 << 40, (n,), dtype=torch.long)
            sample = dict(
                input_ids=ids, loss_mask=torch.ones(n, dtype=torch.long),
                hidden_state=torch.randn(1, n, hidden).to(torch.bfloat16),
                aux_hidden_state=torch.randn(1, n, 3 * hidden).to(torch.bfloat16),
                layers_to_capture=[1, 2, 3], prefix_len=0, rid=rid,
                provenance=dict(sglang_version="0.5.23", hidden_size=hidden, aux_layers=[1, 2, 3], tp_rank=None,
                                dtype="bfloat16", config_sha256="ab" * 32),
            )
            torch.save(sample, path)
            loaded = torch.load(path, weights_only=True)
            s = slm.Sample(path)
            self.assertEqual(s.input_ids(), loaded["input_ids"].tolist())
            self.assertEqual(s.mask(), loaded["loss_mask"].tolist())
            self.assertEqual(s.data["rid"], loaded["rid"])
            self.assertEqual(s.data["prefix_len"], loaded["prefix_len"])
            self.assertEqual(s.data["layers_to_capture"], loaded["layers_to_capture"])
            self.assertEqual(dict(s.data["provenance"]), dict(loaded["provenance"]))
            self.assertEqual(set(s.data), set(loaded))
            for key in ("hidden_state", "aux_hidden_state"):
                self.assertEqual(s.data[key].size, tuple(loaded[key].shape))
            s.write_mask([k % 2 for k in range(n)])
            self.assertEqual(torch.load(path, weights_only=True)["loss_mask"].tolist(), [k % 2 for k in range(n)])


    def test_the_loss_mask_tests_torch_free_writer_matches_torch(self):
        # loss_mask_test.py writes its samples without PyTorch where it has none: those files
        # load in torch as the real ones
        import loss_mask_test

        path = self.path("fake.ckpt")
        loss_mask_test.write_sample_without_torch(path, [5, 6, 7], "r", prefix_len=2)
        s = torch.load(path, weights_only=True)
        self.assertEqual(s["input_ids"].tolist(), [5, 6, 7])
        self.assertEqual(s["loss_mask"].tolist(), [1, 1, 1])
        self.assertEqual(tuple(s["hidden_state"].shape), (1, 3, 4))
        self.assertEqual(s["hidden_state"].dtype, torch.bfloat16)
        self.assertEqual((s["rid"], s["prefix_len"], s["layers_to_capture"]), ("r", 2, None))


if __name__ == "__main__":
    unittest.main(verbosity=2)
