"""A Python tokenizer class (no "fast" offsets), and the same class as remote code, for tests.

Tokenizers that real models ship are not all "fast" (Rust `tokenizers`) ones: Kimi-K2.5's is a
tiktoken-based Python class that transformers loads from the model folder with remote code
(`tokenizer_config.json`'s `auto_map`). Such a class gives no `offset_mapping`. This module is
one of that kind, written for the tests: `ByteBpeTokenizer` subclasses transformers'
`PreTrainedTokenizer` and runs a BPE of its own (here the `tokenizers` model of a fast
tokenizer's `tokenizer.json`, as a tiktoken class runs its tiktoken encoding), so that its ids
equal the fast tokenizer's and any difference in a loss mask comes from the offsets alone.

- `python_twin(fast)`: the class built in this process from a saved fast tokenizer's folder;
- `save_remote(fast, folder)`: a model folder whose `tokenizer_config.json` names this file's
  class in `auto_map` (this file copied in), which `AutoTokenizer.from_pretrained(folder)`
  loads only with `trust_remote_code=True`.

From the command line, the remote-code folder of a saved fast tokenizer (docs/sglang.md's
rehearsal: the tiny tokenizer as remote code, loaded with `--trust-remote-code`):

    python3 crates/pysplice-sglang/tests/python/send/python_tokenizer.py FAST_FOLDER REMOTE_FOLDER

Needs `transformers` and `tokenizers`; no network.
"""

import json
import os
import shutil

from tokenizers import Tokenizer
from transformers import PreTrainedTokenizer

MODULE = "tokenization_bytebpe"


class ByteBpeTokenizer(PreTrainedTokenizer):
    """A Python tokenizer over a BPE file (`bpe.json`, a `tokenizers` model)."""

    vocab_files_names = {"bpe_file": "bpe.json"}
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self, bpe_file, **kwargs):
        self.bpe_file = bpe_file
        self.bpe = Tokenizer.from_file(bpe_file)
        self.vocab = self.bpe.get_vocab(with_added_tokens=True)
        self.by_id = {i: t for t, i in self.vocab.items()}
        super().__init__(**kwargs)

    @property
    def vocab_size(self):
        return len(self.vocab)

    def get_vocab(self):
        return dict(self.vocab)

    def _tokenize(self, text):
        return self.bpe.encode(text, add_special_tokens=False).tokens

    def _convert_token_to_id(self, token):
        return self.vocab[token]

    def _convert_id_to_token(self, index):
        return self.by_id[index]

    def convert_tokens_to_string(self, tokens):
        return self.bpe.decoder.decode(tokens)

    def save_vocabulary(self, save_directory, filename_prefix=None):
        out = os.path.join(save_directory, (filename_prefix + "-" if filename_prefix else "") + "bpe.json")
        if os.path.abspath(out) != os.path.abspath(self.bpe_file):
            shutil.copyfile(self.bpe_file, out)
        return (out,)


def _specials(fast):
    named = {k: getattr(fast, k) for k in ("bos_token", "eos_token", "pad_token", "unk_token") if getattr(fast, k, None)}
    extra = [t for t in fast.all_special_tokens if t not in named.values()]
    extra += [t.content for t in fast.added_tokens_decoder.values() if t.special and t.content not in named.values() and t.content not in extra]
    return named, extra


def python_twin(fast, folder):
    """The Python class over the fast tokenizer's BPE (saved into `folder`), with its chat
    template and special tokens."""
    os.makedirs(folder, exist_ok=True)
    fast.backend_tokenizer.save(os.path.join(folder, "bpe.json"))
    named, extra = _specials(fast)
    tok = ByteBpeTokenizer(os.path.join(folder, "bpe.json"), additional_special_tokens=extra, **named)
    tok.chat_template = fast.chat_template
    return tok


def save_remote(fast, folder):
    """A tokenizer folder that names this module's class in `auto_map` (remote code)."""
    os.makedirs(folder, exist_ok=True)
    fast.backend_tokenizer.save(os.path.join(folder, "bpe.json"))
    shutil.copyfile(os.path.abspath(__file__).replace(".pyc", ".py"), os.path.join(folder, MODULE + ".py"))
    named, extra = _specials(fast)
    config = dict(
        named,
        additional_special_tokens=extra,
        tokenizer_class="ByteBpeTokenizer",
        auto_map={"AutoTokenizer": [MODULE + ".ByteBpeTokenizer", None]},
        chat_template=fast.chat_template,
        model_max_length=1 << 20,
    )
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)
    return folder


if __name__ == "__main__":
    import argparse

    from transformers import AutoTokenizer

    p = argparse.ArgumentParser(description="Save a fast tokenizer's twin as a remote-code Python class.")
    p.add_argument("fast", help="a saved fast tokenizer's folder (crates/pysplice-sglang/tests/python/send/tiny_tokenizer.py FOLDER)")
    p.add_argument("folder", help="the folder to write: loaded only with trust_remote_code=True")
    a = p.parse_args()
    print(save_remote(AutoTokenizer.from_pretrained(a.fast), a.folder))
