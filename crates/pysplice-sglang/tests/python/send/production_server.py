#!/usr/bin/env python3
"""A stand-in production SGLang server that writes request dumps as a given release does.

    python3 crates/pysplice-sglang/tests/python/send/production_server.py --release 0.5.9 --wheel SGLANG.whl --tokenizer DIR
        [--port 0] [--stream-output] [--incremental-streaming-output] [--log FILE]

No GPU, no SGLang: it answers `/generate` (text or input_ids, streamed or not), `/v1/completions`
and `/v1/chat/completions` (the chat template applied to the messages, the prompt ids passed on,
as the releases' OpenAI layer does), `/abort_request`, and `POST /configure_logging` with the
release's ConfigureLoggingReq fields (what `python -m sglang.srt.managers.configure_logging`
sends). "Generation" is a completion picked from the prompt (seeded), tokenized with the model's
tokenizer, ended with `<|im_end|>` (a natural stop, `finish_reason {"type": "stop", "matched":
ID}`) or cut by `max_new_tokens` (`length`); a request whose rid starts with `slow-` waits up to
5 s for `/abort_request` (then `abort`).

The dump is the release's `TokenizerManager.dump_requests`: each finished request with
`log_metrics` appends `(request, output dict, created, finished)`; at `dump_requests_threshold`
the list is pickled (the default protocol) to `<folder>/<%Y-%m-%d_%H-%M-%S>.pkl`, a list in 0.4.x,
`{"server_args", "requests"}` in 0.5.9, with `config_updates` and `resolved_config` in 0.5.23.
The pickled objects are instances of classes named and shaped as the release's: the fields of
`GenerateReqInput` (its bases' included) and of `ConfigureLoggingReq` are read from the wheel's
`sglang/srt/managers/io_struct.py` (`--wheel`), those of 0.5.9's `ServerArgs` from its
`sglang/srt/server_args.py` (with the ModelConfig its `__post_init__` keeps on it, an SGLang
enum inside); 0.5.23's ServerArgs pickles through `_rebuild_server_args` as that
release's `__reduce__` does, its bookkeeping holding the resolved `CudaGraphConfig` (of two
`PhaseConfig`s, their fields from the wheel's `cuda_graph_config.py`) as a real server's does. The output dict is the release's for the path a request takes:
0.4.6 `{"text", "meta_info"}` (the detokenized text only); 0.5.9 `{"text", "output_ids",
"meta_info"}` with only the last delta of `output_ids` for a stream under `--stream-output`;
0.5.23 the same, text and ids both deltas under `--incremental-streaming-output`.

`--log FILE`: one JSON line per dumped request (its rid, prompt ids, output ids, finish reason,
stream, a chat request's messages) and one per file written (`{"file", "rids"}`), so that a test knows what the dumps hold.
"""

import argparse
import ast
import dataclasses
import datetime
import enum
import http.server
import json
import os
import pickle
import random
import sys
import threading
import time
import types
import uuid
import zipfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

IO = "sglang.srt.managers.io_struct"
SA = "sglang.srt.server_args"


# ---------------------------------------------------------------------------------------
# The release's classes, from its wheel


def _fields(tree, name, seen=None):
    """[(field, default)] of class `name` in the module `tree`, its bases' first (as a
    dataclass orders them); defaults that are not literals become None."""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    node = classes.get(name)
    if node is None:
        raise SystemExit("no class %s in the wheel" % name)
    out = []
    for base in node.bases:
        b = ast.unparse(base)
        if b in classes:
            out += _fields(tree, b)
    for b in node.body:
        if isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name):
            if ast.unparse(b.annotation).startswith("ClassVar"):
                continue
            default = None
            if b.value is not None:
                try:
                    default = ast.literal_eval(b.value)
                except ValueError:
                    default = None
            out = [f for f in out if f[0] != b.target.id] + [(b.target.id, default)]
    return out


def _module(name):
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        sub = ".".join(parts[:i])
        if sub not in sys.modules:
            sys.modules[sub] = types.ModuleType(sub)
    return sys.modules[name]


def _dataclass(module, name, fields):
    cls = dataclasses.make_dataclass(name, [(f, object, dataclasses.field(default=d)) for f, d in fields])
    cls.__module__ = module
    cls.__qualname__ = name
    setattr(_module(module), name, cls)
    return cls


def _rebuild_server_args(cls, fields, bookkeeping):
    record = cls(**fields)
    record.__dict__.update(bookkeeping)
    return record


class Classes:
    """GenerateReqInput, ConfigureLoggingReq and ServerArgs of one release."""

    def __init__(self, release, wheel):
        with zipfile.ZipFile(wheel) as z:
            io_tree = ast.parse(z.read("sglang/srt/managers/io_struct.py"))
            sa_tree = ast.parse(z.read("sglang/srt/server_args.py"))
        self.release = release
        self.gen_fields = _fields(io_tree, "GenerateReqInput")
        self.GenerateReqInput = _dataclass(IO, "GenerateReqInput", self.gen_fields)
        self.log_fields = [f for f, _ in _fields(io_tree, "ConfigureLoggingReq")]
        if release.startswith("0.4"):
            self.ServerArgs = None
        elif release == "0.5.9":
            self.ServerArgs = _dataclass(SA, "ServerArgs", _fields(sa_tree, "ServerArgs"))
            mc = "sglang.srt.configs.model_config"
            self.ModelConfig = _dataclass(mc, "ModelConfig", [("model_path", None), ("attention_arch", None)])
            self.AttentionArch = enum.Enum("AttentionArch", [("MLA", 1), ("MHA", 2)], module=mc)
            _module(mc).AttentionArch = self.AttentionArch
        else:  # 0.5.23: a struct whose fields live in namespaces; __reduce__ through the rebuild
            with zipfile.ZipFile(wheel) as z:
                cg_tree = ast.parse(z.read("sglang/srt/model_executor/cuda_graph_config.py"))
            cg = "sglang.srt.model_executor.cuda_graph_config"
            phase = _dataclass(cg, "PhaseConfig", _fields(cg_tree, "PhaseConfig"))
            graph = _dataclass(cg, "CudaGraphConfig", _fields(cg_tree, "CudaGraphConfig"))

            class ServerArgs:
                def __init__(self, **fields):
                    self.__dict__["_fields"] = dict(fields)

                def __reduce__(self):
                    # the fields, then the instance's __dict__: the resolution bookkeeping,
                    # with the CUDA-graph config the resolution declared
                    resolved = graph(decode=phase(backend="full"), prefill=phase(backend="disabled"))
                    bookkeeping = {"_input_frozen": False, "_resolution_finished": True, "_cuda_graph_config_locked": set(),
                                   "_resolved_overrides": [("_parse_cuda_graph_config", {"cuda_graph_config": resolved})]}
                    return (_rebuild_server_args, (type(self), dict(self._fields), bookkeeping))

            ServerArgs.__module__, ServerArgs.__qualname__ = SA, "ServerArgs"
            _module(SA).ServerArgs = ServerArgs
            _rebuild_server_args.__module__ = SA
            _module(SA)._rebuild_server_args = _rebuild_server_args
            self.ServerArgs = ServerArgs

    def server_args(self, args):
        if self.ServerArgs is None:
            return None
        values = dict(model_path=args.model_path, tokenizer_path=args.model_path, stream_output=args.stream_output,
                      incremental_streaming_output=args.incremental_streaming_output, port=args.port,
                      dump_requests_folder=None, crash_dump_folder=None)
        if self.release == "0.5.9":
            sa = self.ServerArgs()
            for k, v in values.items():
                setattr(sa, k, v)
            # __post_init__ calls get_model_config(), which keeps the ModelConfig on the args
            sa.model_config = self.ModelConfig(model_path=args.model_path, attention_arch=self.AttentionArch.MHA)
            return sa
        return self.ServerArgs(**values)

    def request(self, **given):
        """A GenerateReqInput as the release holds one after normalisation (one request)."""
        obj = self.GenerateReqInput()
        for k, v in given.items():
            if not hasattr(obj, k):
                raise ValueError("GenerateReqInput of %s has no field %s" % (self.release, k))
            setattr(obj, k, v)
        if obj.rid is None:
            obj.rid = uuid.uuid4().hex
        if obj.return_logprob is None:
            obj.return_logprob = False
        if obj.logprob_start_len is None:
            obj.logprob_start_len = -1
        if obj.top_logprobs_num is None:
            obj.top_logprobs_num = 0
        if hasattr(obj, "received_time"):
            obj.received_time = time.time()
        return obj


# ---------------------------------------------------------------------------------------
# The server


class Production:
    def __init__(self, args):
        from transformers import AutoTokenizer

        import tiny_tokenizer

        self.args = args
        self.classes = Classes(args.release, args.wheel)
        self.tok = AutoTokenizer.from_pretrained(args.tokenizer)
        self.eos = self.tok.convert_tokens_to_ids("<|im_end|>")
        self.words = tiny_tokenizer._words
        self.lock = threading.Lock()
        self.dump_folder, self.threshold, self.pending = "", 1000, []
        self.aborted, self.waiting = set(), {}
        self.log = open(args.log, "a", buffering=1) if args.log else None
        self.writes = []

    def configure_logging(self, body):
        if not isinstance(body, dict):
            raise ValueError("not an object")
        for k in body:
            if k not in self.classes.log_fields:
                raise ValueError("ConfigureLoggingReq of %s has no field %s" % (self.args.release, k))
        with self.lock:
            if body.get("dump_requests_folder") is not None:
                self.dump_folder = body["dump_requests_folder"]
            if body.get("dump_requests_threshold") is not None:
                self.threshold = int(body["dump_requests_threshold"])

    def generate(self, obj):
        """(output ids, finish reason dict): the 'model' run on one request."""
        if obj.input_ids is None:
            obj_ids = self.tok(obj.text)["input_ids"]  # TokenizerManager: tokenizer.encode(text)
        else:
            obj_ids = list(obj.input_ids)
        rng = random.Random(hash(tuple(obj_ids)) & 0xFFFFFFFF)
        text = self.words(rng, rng.randint(3, 40))
        out = self.tok(text, add_special_tokens=False)["input_ids"] + [self.eos]
        sp = obj.sampling_params or {}
        limit = sp.get("max_new_tokens", 256)
        if obj.rid.startswith("slow-"):
            ev = threading.Event()
            with self.lock:
                self.waiting[obj.rid] = ev
            ev.wait(5)
            with self.lock:
                self.waiting.pop(obj.rid, None)
                aborted = obj.rid in self.aborted
            if aborted:
                n = rng.randint(1, len(out) - 1)
                return obj_ids, out[:n], {"type": "abort", "message": "Abort in waiting queue", "status_code": 499, "err_type": None}
        if len(out) > limit:
            return obj_ids, out[:limit], {"type": "length", "length": limit}
        return obj_ids, out, {"type": "stop", "matched": self.eos}

    def abort(self, rid):
        with self.lock:
            self.aborted.add(rid)
            ev = self.waiting.get(rid)
        if ev:
            ev.set()

    def finish(self, obj, prompt, output, finish, created, stream, chunk, messages=None):
        """The out dict the release dumps for this request, and the dump itself."""
        rel = self.args.release
        text = self.tok.decode(output, skip_special_tokens=True)
        meta = {"id": obj.rid, "finish_reason": finish, "prompt_tokens": len(prompt)}
        if not rel.startswith("0.4"):
            meta.update(weight_version="default", total_retractions=0)
        meta.update(completion_tokens=len(output), cached_tokens=0, e2e_latency=time.time() - created)
        last = output[(len(output) - 1) // chunk * chunk :] if output else []  # a stream's last chunk
        if rel.startswith("0.4"):
            out = {"text": text, "meta_info": meta}  # BatchStrOut: the text, never the ids
        elif rel == "0.5.9":
            ids = last if (stream and self.args.stream_output) else list(output)
            out = {"text": text, "output_ids": ids, "meta_info": meta}
        else:
            if stream and self.args.incremental_streaming_output:
                out = {"text": self.tok.decode(last, skip_special_tokens=True), "output_ids": last, "meta_info": meta}
            else:
                out = {"text": text, "output_ids": list(output), "meta_info": meta}
        if obj.log_metrics:
            self.dump(obj, out, created, time.time(), prompt, output, stream, messages)
        return out, text

    def dump(self, obj, out, created, finished, prompt, output, stream, messages=None):
        with self.lock:
            if not self.dump_folder:
                return
            self.pending.append((obj, out, created, finished))
            if self.log:
                self.log.write(json.dumps(dict(rid=obj.rid, prompt=prompt, output=output, finish=out["meta_info"]["finish_reason"]["type"],
                                               stream=stream, created=created, messages=messages)) + "\n")
            if len(self.pending) < self.threshold:
                return
            filename = os.path.join(self.dump_folder, datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S") + ".pkl")
            to_dump, self.pending = self.pending, []
            if self.args.release.startswith("0.4"):
                data = to_dump
            elif self.args.release == "0.5.9":
                data = {"server_args": self.classes.server_args(self.args), "requests": list(to_dump)}
            else:
                data = {"server_args": self.classes.server_args(self.args), "config_updates": [("startup", {})],
                        "resolved_config": {"model_path": self.args.model_path}, "requests": list(to_dump)}
            rids = [e[0].rid for e in to_dump]
        # as the release: written from a thread (asyncio.to_thread), the folder made first
        os.makedirs(self.dump_folder, exist_ok=True)
        with open(filename, "wb") as f:
            pickle.dump(data, f)
        if self.log:
            self.log.write(json.dumps(dict(file=os.path.basename(filename), rids=rids)) + "\n")


P = None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _send(self, status, obj=None, ctype="application/json"):
        body = b"" if obj is None else (obj if isinstance(obj, bytes) else json.dumps(obj).encode())
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.split("?")[0] in ("/health", "/health_generate"):
            return self._send(200)
        if self.path.split("?")[0] in ("/get_model_info", "/model_info"):
            return self._send(200, {"model_path": P.args.model_path, "is_generation": True})
        self._send(404, {"detail": "Not Found"})

    def do_POST(self):
        path = self.path.split("?")[0]
        n = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(n) or b"null")
        except ValueError:
            return self._send(400, {"error": "not JSON"})
        try:
            if path == "/configure_logging":
                P.configure_logging(body)
                return self._send(200)
            if path == "/abort_request":
                P.abort(body.get("rid"))
                return self._send(200)
            if path == "/generate":
                obj = P.classes.request(**{k: v for k, v in body.items() if k in ("text", "input_ids", "rid", "sampling_params", "stream")})
                return self._run(obj, "native")
            if path == "/v1/completions":
                prompt = body.get("prompt")
                kw = {"input_ids": prompt} if isinstance(prompt, list) else {"text": prompt}
                obj = P.classes.request(sampling_params={"max_new_tokens": body.get("max_tokens", 128), "temperature": body.get("temperature", 1.0)},
                                        stream=bool(body.get("stream")), rid=body.get("rid"), **kw)
                return self._run(obj, "completion")
            if path == "/v1/chat/completions":
                ids = P.tok.apply_chat_template(body["messages"], tokenize=True, add_generation_prompt=True)
                if hasattr(ids, "keys"):  # transformers 5 answers a BatchEncoding
                    ids = ids["input_ids"]
                obj = P.classes.request(input_ids=list(ids), sampling_params={"max_new_tokens": body.get("max_tokens", 128)},
                                        stream=bool(body.get("stream")), rid=body.get("rid"))
                return self._run(obj, "chat", body["messages"])
        except (ValueError, KeyError, TypeError) as e:
            return self._send(400, {"error": {"message": str(e)}})
        self._send(404, {"detail": "Not Found"})

    def _run(self, obj, api, messages=None):
        created = time.time()
        prompt, output, finish = P.generate(obj)
        out, text = P.finish(obj, prompt, output, finish, created, bool(obj.stream), P.args.chunk, messages)
        answer = {"text": text, "output_ids": output, "meta_info": out["meta_info"]}
        if obj.stream:
            data = b"data: " + json.dumps(answer).encode() + b"\n\ndata: [DONE]\n\n"
            return self._send(200, data, "text/event-stream")
        self._send(200, answer)

    do_PUT = do_POST


def main(argv=None):
    global P
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--release", required=True, choices=("0.4.6", "0.5.9", "0.5.23"))
    p.add_argument("--wheel", required=True, help="that release's wheel (its io_struct.py is read)")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--model-path", default="org/production-model")
    p.add_argument("--stream-output", action="store_true", help="0.5.9's --stream-output")
    p.add_argument("--incremental-streaming-output", action="store_true", help="0.5.23's --incremental-streaming-output")
    p.add_argument("--chunk", type=int, default=4, help="tokens per streamed chunk")
    p.add_argument("--log")
    args = p.parse_args(argv)
    P = Production(args)
    http.server.ThreadingHTTPServer.daemon_threads = True
    server = http.server.ThreadingHTTPServer((args.host, args.port), Handler)
    print("listening on http://%s:%d" % server.server_address[:2], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
