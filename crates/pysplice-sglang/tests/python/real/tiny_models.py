#!/usr/bin/env python3
"""Tiny random-weight models in Hugging Face's layout, for the real SGLang server on a CPU.

    python3 crates/pysplice-sglang/tests/python/real/tiny_models.py FOLDER ARCH [--seed 0]

ARCH is `llama` (LlamaForCausalLM), `deepseek_v3` (DeepseekV3ForCausalLM: MLA with a q LoRA,
layers 1-7 MoE of 8 routed experts, top-2 by sigmoid with `noaux_tc`, one shared expert) or
`deepseek_v2` (DeepseekV2ForCausalLM in V2-Lite's shape: no q LoRA, softmax top-2, two shared
experts). Each model has 8 layers of width 64 and the byte-level ChatML tokenizer of
crates/pysplice-sglang/tests/python/send/tiny_tokenizer.py. The weights are transformers' own random initialisation, rounded to
bfloat16 and saved so (SGLang serves bfloat16; the reference reads the same numbers in float32).

Needs torch, transformers and tokenizers (the SGLang release's own virtual environment has them).
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ARCHES = ("llama", "deepseek_v3", "deepseek_v2")
LAYERS = 8
VOCAB = 1024  # above the tiny tokenizer's ids (about 1,000), a multiple of 64


def _config(arch, tokenizer):
    common = {
        "vocab_size": VOCAB,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": 4,
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
        "bos_token_id": tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        "eos_token_id": tokenizer.convert_tokens_to_ids("<|im_end|>"),
        "pad_token_id": tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        "torch_dtype": "bfloat16",
    }
    if arch == "llama":
        return "LlamaConfig", "LlamaForCausalLM", dict(common, num_key_value_heads=2, rope_theta=10000.0)
    # What real DeepSeek checkpoints carry and transformers' config class does not write: SGLang's
    # CPU rope supports only yarn, and its MoE reads the layer frequency and routing method.
    deepseek = dict(
        common,
        num_key_value_heads=4,
        kv_lora_rank=32,
        qk_nope_head_dim=16,
        qk_rope_head_dim=8,
        v_head_dim=16,
        moe_intermediate_size=32,
        n_routed_experts=8,
        num_experts_per_tok=2,
        first_k_dense_replace=1,
        moe_layer_freq=1,
        n_group=1,
        topk_group=1,
        routed_scaling_factor=1.0,
        norm_topk_prob=True,
        rope_theta=10000.0,
        rope_scaling={
            "type": "yarn",
            "rope_type": "yarn",
            "factor": 1.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
        },
        attention_bias=False,
    )
    if arch == "deepseek_v3":
        return "DeepseekV3Config", "DeepseekV3ForCausalLM", dict(
            deepseek, q_lora_rank=32, n_shared_experts=1, topk_method="noaux_tc", scoring_func="sigmoid"
        )
    # V2-Lite routes by softmax and does not renormalise its top-k weights (norm_topk_prob false)
    return "DeepseekV2Config", "DeepseekV2ForCausalLM", dict(
        deepseek, q_lora_rank=None, n_shared_experts=2, topk_method="greedy", scoring_func="softmax", norm_topk_prob=False
    )


def make(folder, arch, seed=0):
    """Write a tiny ARCH model with its tokenizer into FOLDER; returns the architecture name."""
    import torch
    import transformers

    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "send"))
    import tiny_tokenizer

    os.makedirs(folder, exist_ok=True)
    tiny_tokenizer.make(folder)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    config_name, model_name, fields = _config(arch, tokenizer)
    config = getattr(transformers, config_name)(**fields)
    torch.manual_seed(seed)
    model = getattr(transformers, model_name)(config).to(torch.bfloat16)
    model.save_pretrained(folder, safe_serialization=True)
    # Keep the DeepSeek fields SGLang reads even where this transformers release renames them.
    path = os.path.join(folder, "config.json")
    with open(path) as f:
        written = json.load(f)
    for key in ("rope_scaling", "moe_layer_freq", "topk_method", "scoring_func", "q_lora_rank", "norm_topk_prob"):
        if key in fields and key not in written:
            written[key] = fields[key]
    written["architectures"] = [model_name]
    with open(path, "w") as f:
        json.dump(written, f, indent=2, sort_keys=True)
    return model_name


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("arch", choices=ARCHES)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(make(args.folder, args.arch, args.seed))


if __name__ == "__main__":
    main()
