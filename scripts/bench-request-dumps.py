#!/usr/bin/env python3
"""Benchmark: how fast sglang-hs-send reads and prepares SGLang request dumps, on one core.

    nice -n 10 python3 scripts/bench-request-dumps.py [--requests 60000] [--prompt 400] [--completion 250]

Writes dump files as 0.5.x does (`{"server_args", "requests"}`, 1,000 requests a file, the
default threshold, pickled with the default protocol) of chat requests (`input_ids` given, as the
OpenAI chat endpoint passes them) whose prompt and completion lengths are drawn around
--prompt and --completion tokens, with a tenth stopped by `length`; then times
`request_dumps.harvest` over the folder: the opcode scan, the restricted unpickler and the
preparation of each sample (ids, mask, dedup, rid, source), everything the sender does before
it sends. Prints requests a minute of wall-clock time (the best of --repeat runs) and of
CPU time (what a busy machine shares out), and the bytes read.
Standard library only; no tokenizer is needed for requests that carry their ids.
"""

import argparse
import dataclasses
import os
import pickle
import random
import shutil
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli", "src", "sglang_hs_send"))

import request_dumps as rd  # noqa: E402


def classes():
    def module(name):
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
        return sys.modules[name]

    def make(mod, name, fields):
        cls = dataclasses.make_dataclass(name, [(f, object, dataclasses.field(default=None)) for f in fields])
        cls.__module__, cls.__qualname__ = mod, name
        setattr(module(mod), name, cls)
        return cls

    # the fields 0.5.9's GenerateReqInput pickles (its bases' included), values as normalised
    gen = make(rd.IO, "GenerateReqInput", [
        "rid", "http_worker_ipc", "validation_time", "received_time", "received_time_perf", "text", "input_ids",
        "input_embeds", "image_data", "video_data", "audio_data", "sampling_params", "return_logprob",
        "logprob_start_len", "top_logprobs_num", "token_ids_logprob", "return_text_in_logprobs", "stream",
        "log_metrics", "return_hidden_states", "return_routed_experts", "routed_experts_start_len", "modalities",
        "session_params", "lora_path", "lora_id", "custom_logit_processor", "bootstrap_host", "bootstrap_port",
        "bootstrap_room", "bootstrap_pair_key", "decode_tp_size", "require_reasoning", "data_parallel_rank",
        "background", "conversation_id", "priority", "extra_key", "routing_key", "no_logs", "custom_labels",
        "return_bytes", "return_entropy", "external_trace_header", "need_wait_for_image", "num_items_assigned",
        "max_dynamic_patch", "min_dynamic_patch", "image_max_dynamic_patch", "video_max_dynamic_patch"])
    sa = make("sglang.srt.server_args", "ServerArgs", ["model_path", "tokenizer_path", "stream_output"])
    return gen, sa


def write(folder, n, prompt, completion, seed=1):
    gen, sa = classes()
    rng = random.Random(seed)
    os.makedirs(folder)
    total = 0
    for start in range(0, n, 1000):
        reqs = []
        for k in range(start, min(n, start + 1000)):
            p = max(1, int(rng.gauss(prompt, prompt / 3)))
            c = max(1, int(rng.gauss(completion, completion / 3)))
            ids = [rng.randrange(150000) for _ in range(p)]
            out = [rng.randrange(150000) for _ in range(c)]
            finish = {"type": "length", "length": c} if k % 10 == 0 else {"type": "stop", "matched": 151645}
            obj = gen(rid="%032x" % rng.getrandbits(128), input_ids=ids, sampling_params={"max_new_tokens": 2048, "temperature": 0.7},
                      return_logprob=False, logprob_start_len=-1, top_logprobs_num=0, stream=k % 5 == 0, log_metrics=True,
                      return_hidden_states=False, routed_experts_start_len=0, modalities=[], received_time=time.time())
            meta = {"id": obj.rid, "finish_reason": finish, "prompt_tokens": p, "weight_version": "default", "total_retractions": 0,
                    "completion_tokens": c, "cached_tokens": 0, "e2e_latency": 1.5}
            reqs.append((obj, {"text": "x" * (4 * c), "output_ids": out, "meta_info": meta}, 1.0e9 + k, 1.0e9 + k + 1.5))
        path = os.path.join(folder, "2026-01-01_00-00-%02d.pkl" % (start // 1000 % 60) if n <= 60000 else "f%06d.pkl" % start)
        with open(path, "wb") as f:
            pickle.dump({"server_args": sa(model_path="org/model", tokenizer_path="org/model", stream_output=False), "requests": reqs}, f)
        total += os.path.getsize(path)
    return total


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=60000)
    p.add_argument("--prompt", type=int, default=400, help="mean prompt tokens (default %(default)s)")
    p.add_argument("--completion", type=int, default=250, help="mean completion tokens (default %(default)s)")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    tmp = tempfile.mkdtemp(prefix="bench-request-dumps-")
    try:
        folder = os.path.join(tmp, "dumps")
        size = write(folder, args.requests, args.prompt, args.completion)
        best = None
        for _ in range(args.repeat):
            t, cpu = time.perf_counter(), time.process_time()
            samples = skipped = tokens = 0
            for item in rd.harvest(rd.dump_files([folder]), rd.Options()):
                if item.ids is not None:
                    samples += 1
                    tokens += len(item.ids)
                else:
                    skipped += 1
            elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
            if best is None or elapsed < best:
                best, best_cpu = elapsed, cpu
        rate = args.requests / best * 60
        print("%d requests (%d files, %.0f MB; mean prompt %d, completion %d tokens): %d samples, %d skipped, %d tokens"
              % (args.requests, (args.requests + 999) // 1000, size / 1e6, args.prompt, args.completion, samples, skipped, tokens))
        print("read and prepared in %.2f s on one core (best of %d; %.2f s of CPU): %.0f requests a minute "
              "(%.0f a CPU minute), %.1f MB/s" % (best, args.repeat, best_cpu, rate, args.requests / best_cpu * 60, size / 1e6 / best))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
