#!/usr/bin/env python3
"""SpecForge's own code as the reference of the `send` test (PyPI `specforge==0.2.0`, the
package of sgl-project/SpecForge).

    pip install --no-deps specforge==0.2.0     # its modules used here need torch, transformers, pydantic
    python3 crates/pysplice-sglang/tests/python/send/specforge_ref.py parse TOKENIZER_FOLDER CONVERSATIONS.jsonl   # one JSON line per conversation
    python3 crates/pysplice-sglang/tests/python/send/specforge_ref.py read DUMP_FOLDER                              # what its offline reader yields

(a) `parse(tokenizer, messages)`: the `input_ids` and `loss_mask` that
    `specforge.data.parse.GeneralParser` computes, with a ChatTemplate from SpecForge's registry
    (`specforge.data.template.TEMPLATE_REGISTRY`). The default is "qwen" (ChatML:
    `<|im_start|>assistant\\n` ... `<|im_end|>\\n`) with its `system_prompt` set to None,
    registered under the name "qwen-no-default-system" through the registry's own `register` (the
    way SpecForge documents for a custom template): the stock "qwen" entry adds "You are a helpful
    assistant." to every conversation that has no system turn, which changes the ids, while the
    server is sent the conversation as the chat template renders it. Pass template="qwen" for the
    stock entry.
(b) `read(folder)`: SpecForge's offline reader,
    `specforge.runtime.data_plane.offline_reader.OfflineManifestReader` (the reader its offline
    training assembles from `hidden_states_path`), with `validate_files=True` so that it opens every
    file and checks its keys, then each SampleRef's tensors fetched through SpecForge's
    `LocalFeatureStore.get` (how its FeatureDataLoader resolves the reader's file:// refs). Returns
    [{"path", "sample_id", "num_tokens", "tensors": {key: tensor}}] in SpecForge's order.

Both import the module files they need directly (`specforge.data.parse`, `specforge.data.template`,
`specforge.runtime.data_plane.offline_reader`, `...feature_store`): the package's `__init__`s are
light in 0.2.0, and nothing here imports sglang, wandb or the training stack. Nothing of SpecForge
is stubbed.
"""

import json
import sys
import warnings

TEMPLATE = "qwen-no-default-system"


def template(name=TEMPLATE):
    """A ChatTemplate from SpecForge's registry (registering the default one on first use)."""
    from specforge.data.template import TEMPLATE_REGISTRY

    if name == TEMPLATE and name not in TEMPLATE_REGISTRY.get_all_template_names():
        stock = TEMPLATE_REGISTRY.get("qwen")
        TEMPLATE_REGISTRY.register(TEMPLATE, stock.model_copy(update={"system_prompt": None}))
    return TEMPLATE_REGISTRY.get(name)


def parse(tokenizer, messages, template_name=TEMPLATE, max_length=1 << 20):
    """(input_ids, loss_mask) as lists of ints, from SpecForge's GeneralParser.parse."""
    from specforge.data.parse import GeneralParser

    parser = GeneralParser(tokenizer, template(template_name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it warns when the data brings its own system turn
        ids, mask = parser.parse(messages, max_length=max_length)
    return ids.tolist(), mask.tolist()


def read(folder):
    """What SpecForge's offline reader yields for `folder`, with the tensors loaded."""
    from specforge.runtime.data_plane.feature_store import LocalFeatureStore
    from specforge.runtime.data_plane.offline_reader import OfflineManifestReader

    store = LocalFeatureStore()
    out = []
    for ref in OfflineManifestReader(folder, validate_files=True).read():
        tensors, handle = store.get(ref)
        out.append({
            "path": ref.feature_store_uri[len("file://"):],
            "sample_id": ref.sample_id,
            "num_tokens": ref.num_tokens,
            "tensors": {k: v.clone() for k, v in tensors.items()},
        })
        store.release(handle)
    return out


def main(argv):
    if len(argv) == 3 and argv[0] == "parse":
        from transformers import AutoTokenizer

        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        from tiny_tokenizer import messages_of

        tok = AutoTokenizer.from_pretrained(argv[1])
        with open(argv[2], encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                try:
                    item = json.loads(line)
                    ids, mask = parse(tok, messages_of(item))
                    print(json.dumps({"line": number, "id": item.get("id"), "input_ids": ids, "loss_mask": mask}))
                except Exception as e:  # named, as a sender must name it
                    print(json.dumps({"line": number, "error": "%s: %s" % (type(e).__name__, e)}))
        return 0
    if len(argv) == 2 and argv[0] == "read":
        for s in read(argv[1]):
            t = s["tensors"]
            print(json.dumps({"path": s["path"], "sample_id": s["sample_id"], "num_tokens": s["num_tokens"],
                              "shapes": {k: list(v.shape) for k, v in t.items()},
                              "loss_mask_sum": int(t["loss_mask"].sum())}))
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
