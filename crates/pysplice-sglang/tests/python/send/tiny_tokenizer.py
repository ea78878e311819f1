#!/usr/bin/env python3
"""A small tokenizer with a real chat template, and conversations for it, for the `send` test.

    python3 crates/pysplice-sglang/tests/python/send/tiny_tokenizer.py FOLDER [--jsonl FILE --n 300 --seed 7]

Needs `tokenizers` and `transformers` (no network, no PyTorch). `make(folder)` trains a
byte-level BPE (about 1,000 ids) on the words the conversations use, wraps it in transformers'
PreTrainedTokenizerFast with a ChatML chat template (Qwen's layout: `<|im_start|>ROLE\\n ...
<|im_end|>\\n`) and saves it, so that another process loads it with
`AutoTokenizer.from_pretrained(folder)`. Like the templates of Llama 2 or Mistral, the template
refuses a conversation whose user and assistant turns do not alternate (`raise_exception`, which
transformers turns into a jinja2 TemplateError).

`conversations(n, seed)` gives n cases, each `Case(line, kind)`: `line` is the JSON object of
one JSONL line (`{"id", "messages"}` in the OpenAI shape, or `{"id", "conversations"}` in
ShareGPT's `from`/`value` shape), `kind` says what a sender must do with it:

- "ok": render and send (system/user/assistant, 1-4 exchanges, 3-300 words a turn, some with
  newlines and non-ASCII text);
- "sharegpt": the same in ShareGPT's shape (`human`/`gpt`, `system`);
- "long": over 4,096 tokens with this tokenizer (the stand-in's default --context-length; every
  other case stays under 2,600);
- "rejected": two user turns in a row, which the template refuses.

`write_jsonl(path, cases, not_json=(...))` writes them one a line, with lines that are not
JSON at the given 1-based line numbers, and returns {line number: kind} ("not-json" for those).
"""

import collections
import json
import os
import random
import sys

CHATML = (
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}{% if not loop.first %}"
    "{{ raise_exception('The system message must come first') }}{% endif %}"
    "{% elif m['role'] in ('user', 'assistant') %}"
    "{% set i = loop.index0 - (1 if messages[0]['role'] == 'system' else 0) %}"
    "{% if (m['role'] == 'user') != (i % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}{% endif %}"
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zen", "qua", "pri", "dor", "el", "fy", "gho"]
EXTRA = ["Paris", "prime", "tensor", "naïve", "café", "日本", "→", "x²", "—", "42", "3.14", "OK"]

Case = collections.namedtuple("Case", "line kind")


def _words(rng, n):
    out = []
    for _ in range(n):
        if rng.random() < 0.08:
            out.append(rng.choice(EXTRA))
        else:
            out.append("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3))))
    text = " ".join(out)
    if n > 20 and rng.random() < 0.3:  # paragraphs
        cut = rng.randint(1, len(text) - 1)
        text = text[:cut].rstrip() + "\n\n" + text[cut:].lstrip()
    return text.capitalize() + rng.choice([".", "?", "!", ""])


def _corpus():
    rng = random.Random(0)
    return [_words(rng, rng.randint(5, 60)) for _ in range(400)] + ["system user assistant"] + EXTRA


def make(folder):
    """Train, wrap and save the tokenizer into `folder`; return the PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1000,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,  # its bar prints blank lines when stderr is not a terminal
    )
    tok.train_from_iterator(_corpus(), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<|endoftext|>"
    )
    fast.chat_template = CHATML
    os.makedirs(folder, exist_ok=True)
    fast.save_pretrained(folder)
    return fast


def _conversation(rng, turns, words):
    msgs = []
    if rng.random() < 0.6:
        msgs.append({"role": "system", "content": _words(rng, rng.randint(3, 20))})
    for _ in range(turns):
        msgs.append({"role": "user", "content": _words(rng, rng.randint(3, words))})
        msgs.append({"role": "assistant", "content": _words(rng, rng.randint(3, words))})
    return msgs


def _sharegpt(msgs):
    names = {"system": "system", "user": "human", "assistant": "gpt"}
    return [{"from": names[m["role"]], "value": m["content"]} for m in msgs]


def conversations(n, seed=7):
    """n cases (see the module's doc): about 1 in 8 ShareGPT-shaped, 3 long, 1 rejected."""
    rng = random.Random(seed)
    special = {n // 3: "long", n // 2: "long", n - 2: "long", n // 4: "rejected"}
    cases = []
    for i in range(n):
        kind = special.get(i) or ("sharegpt" if rng.random() < 0.125 else "ok")
        rid = "conv-%05d" % i
        if kind == "long":
            msgs = _conversation(rng, 2, 10) + [
                {"role": "user", "content": _words(rng, 40)},
                {"role": "assistant", "content": _words(rng, 3500)},
            ]
        elif kind == "rejected":
            msgs = _conversation(rng, 1, 20)
            msgs.insert(len(msgs) - 1, {"role": "user", "content": _words(rng, 8)})
        else:
            msgs = _conversation(rng, rng.randint(1, 4), rng.choice([10, 40, 120, 300]))
        line = {"id": rid, "conversations": _sharegpt(msgs)} if kind == "sharegpt" else {"id": rid, "messages": msgs}
        cases.append(Case(line, kind))
    return cases


def messages_of(line):
    """The OpenAI-shaped messages of one line, whichever shape it has."""
    if "messages" in line:
        return line["messages"]
    roles = {"human": "user", "gpt": "assistant", "system": "system"}
    return [{"role": roles[m["from"]], "content": m["value"]} for m in line["conversations"]]


def write_jsonl(path, cases, not_json=()):
    """Write the cases one a line, plus lines that are not JSON at the 1-based numbers in
    `not_json`; return {line number: kind}."""
    kinds, number = {}, 0
    pending = list(cases)
    with open(path, "w", encoding="utf-8") as f:
        while pending:
            number += 1
            if number in not_json:
                f.write('{"id": "broken", "messages": [\n')
                kinds[number] = "not-json"
                continue
            case = pending.pop(0)
            f.write(json.dumps(case.line, ensure_ascii=False) + "\n")
            kinds[number] = case.kind
    return kinds


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(description="Save the tiny tokenizer (and a conversations file).")
    p.add_argument("folder")
    p.add_argument("--jsonl")
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args()
    make(a.folder)
    if a.jsonl:
        kinds = write_jsonl(a.jsonl, conversations(a.n, a.seed), not_json=(a.n // 5,))
        print(json.dumps(collections.Counter(kinds.values())))
    sys.exit(0)
