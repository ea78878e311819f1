#!/usr/bin/env python3
"""A stand-in SGLang server for the `send` end-to-end test (no GPU, no SGLang).

    python3 crates/pysplice-sglang/tests/python/send/standin_server.py --port 0 [--host 127.0.0.1] [--log FILE]
        [--patched-mock PATCHED.py --dump-dir DIR [--vocab-size N] [--max-batch N]]
        [--context-length N] [--fail-first K] [--delay S]

With --port 0 it picks a free port; either way it prints `listening on http://HOST:PORT` on
stdout (flushed) once it accepts connections.

It speaks the native API of SGLang 0.5.23 (target/sglang-corpus/0.5.23-full: the
`/generate` handler in srt/entrypoints/http_server.py, its contract gate
sglang/api/v1/api_types.py, GenerateReqInput in srt/managers/io_struct.py, the checks and the
response in srt/managers/tokenizer_manager.py):

- POST/PUT /generate: `input_ids` (a list of ints, or a list of lists for a batch), `rid` (a
  string, or a list for a batch; a string with a batch becomes `rid_0, rid_1, ...`; none
  becomes uuid4 hex), `sampling_params` (a dict or a list; unknown keys rejected as the
  release's schema does), the other GenerateReqInput fields accepted and ignored. The answer
  is what the release returns for a non-streaming request: `{"text", "output_ids",
  "meta_info": {"id", "finish_reason", "prompt_tokens", "weight_version", "num_retractions",
  "reasoning_tokens", "completion_tokens", "cached_tokens", "e2e_latency",
  "response_sent_to_client_ts"}}`, a list of them for a batch. `text` is "" (the stand-in has
  no tokenizer); `stream: true` is answered as server-sent events, one chunk then [DONE].
- Errors as the release gives them: a body that is not JSON -> 400 with FastAPI's
  RequestValidationError rendered as SGLang's ErrorResponse (`{"object": "error", "message",
  "type": "Bad Request", "param": null, "code": 400}`; the message text is FastAPI's and
  approximated); a schema violation -> 400 `{"error": "invalid type: ..."}`; input not shorter
  than --context-length, a total (input + max_new_tokens) over it, a rid already in flight
  (or twice in one batch), an id outside the vocabulary -> 400 `{"error": {"message": ...}}`
  with the release's exact texts.
- GET /health, /health_generate, /ready (200), /model_info and /get_model_info,
  /server_info and /get_server_info, /v1/models, /get_load, POST /flush_cache: what the
  router (smg / sglang-router) probes before it accepts a worker.

--fail-first K: the first K /generate requests fail transiently, alternately a 503 with an
empty body (what SGLang answers while starting or shutting down) and a connection closed
without an answer (a crashed or restarted server).

--patched-mock PATH (needs PyTorch, CPU is enough): every forward pass runs the
DeepseekV2ForCausalLM of PATH, the runtime mock crates/pysplice-sglang/tests/python/runtime/mock_deepseek_v2.py patched with
the real recipe (crates/pysplice-sglang/tests/python/runtime/patch_mock.sh), so the recipe's injected dump code writes the
sample files into --dump-dir (SGLANG_HS_DUMP_DIR). The ForwardBatch is filled as SGLang
0.5.10+'s scheduler fills it for a prefill: EXTEND mode, rids, extend_seq_lens_cpu,
extend_prefix_lens_cpu all 0, orig_seq_lens = the prompt lengths. Requests that arrive together
are run as one pass (at most --max-batch), as a scheduler batches them. A fake `sglang`
package (a temporary folder on sys.path) answers the rank getters the dump imports. Without
--patched-mock nothing needs PyTorch and no sample is written; --log FILE records, in both
modes, one JSON line per accepted request: {"rid", "input_ids", "pass"}; --access-log FILE one
line per HTTP request (what a router probes).

SIGTERM/SIGINT: stop taking requests, finish the passes in flight, then (with a dump) wait
until the dump folder is idle, with the wait-until-idle step of docs/sglang.md ("5. Wait until the
dump is idle") run as written there, and exit with its status.
"""

import argparse
import atexit
import http.server
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.dont_write_bytecode = True

RELEASE = "0.5.23"
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", ".."))
SAMPLING_KEYS = {
    "max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p", "top_k",
    "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens", "n",
    "json_schema", "regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens",
    "spaces_between_special_tokens", "no_stop_trim", "stream_interval", "logit_bias",
    "sampling_seed", "custom_params", "beam_width", "watermark", "choice",
}
SAMPLING_ORDER = (
    "max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p", "top_k",
    "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens", "n",
    "json_schema", "regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens",
    "spaces_between_special_tokens", "no_stop_trim", "stream_interval", "logit_bias",
    "sampling_seed", "custom_params", "beam_width", "watermark", "choice",
)


class ContractError(ValueError):
    """The release's schema rejects the body (sglang.api.v1 JsonContractError)."""


def _unexpected(v):
    # serde's `Unexpected` wording, as api_types._unexpected renders it
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean `%s`" % ("true" if v else "false")
    if isinstance(v, int):
        return "integer `%d`" % v
    if isinstance(v, float):
        return "floating point `%r`" % v
    if isinstance(v, str):
        return 'string "%s"' % v
    return {list: "sequence", dict: "map"}.get(type(v), type(v).__name__)


def _invalid(v, expected):
    return ContractError("invalid type: %s, expected %s" % (_unexpected(v), expected))


def _ids(v):
    if not isinstance(v, list):
        raise _invalid(v, "a sequence")
    for e in v:
        if not isinstance(e, int) or isinstance(e, bool):
            raise _invalid(e, "i64")
    return v


def check_contract(body):
    """The part of the release's GenerateRequest decoder that the fields a sender uses go
    through (rid, text, input_ids, stream, sampling_params), with its error texts."""
    if not isinstance(body, dict):
        raise _invalid(body, "struct GenerateRequest")
    rid = body.get("rid")
    if rid is not None and not isinstance(rid, list) and not isinstance(rid, str):
        raise _invalid(rid, "a value or an array of values for StringOrList")
    if isinstance(rid, list):
        for e in rid:
            if not isinstance(e, str):
                raise _invalid(e, "a string")
    ids = body.get("input_ids")
    if ids is not None:
        if not isinstance(ids, list):
            raise _invalid(ids, "a value or an array of values for TokenIdsOrList")
        if ids and not (isinstance(ids[0], (int, float)) and not isinstance(ids[0], bool)):
            for e in ids:
                _ids(e)
        else:
            _ids(ids)
    if body.get("stream") is not None and not isinstance(body["stream"], bool):
        raise _invalid(body["stream"], "a boolean")
    sp = body.get("sampling_params")
    if sp is not None:
        for one in sp if isinstance(sp, list) else [sp]:
            if not isinstance(one, dict):
                raise _invalid(one, "a value or an array of values for SamplingParamsOrList")
            for key, x in one.items():
                if key not in SAMPLING_KEYS:
                    listed = ", ".join("`%s`" % f for f in SAMPLING_ORDER)
                    raise ContractError("unknown field `%s`, expected one of %s" % (key, listed))
                if key in ("max_new_tokens", "top_k", "min_new_tokens", "n") and x is not None:
                    if not isinstance(x, int) or isinstance(x, bool):
                        raise _invalid(x, "i64")
                if key in ("temperature", "top_p", "min_p") and x is not None:
                    if not isinstance(x, (int, float)) or isinstance(x, bool):
                        raise _invalid(x, "f64")


def normalize(body):
    """(rids, ids per request, sampling params per request, is_single), as GenerateReqInput's
    normalisation does; ValueError with the release's text otherwise."""
    ids = body.get("input_ids")
    if ids is None:
        if body.get("text") is not None:
            raise ValueError("the stand-in has no tokenizer: send input_ids")
        raise ValueError("Either text, input_ids or input_embeds should be provided.")
    single = not ids or not isinstance(ids[0], list)
    batch = [ids] if single else ids
    rid = body.get("rid")
    if single:
        if isinstance(rid, list):
            rid = rid[0] if rid else None
        rids = [rid if rid is not None else uuid.uuid4().hex]
    elif rid is None:
        rids = [uuid.uuid4().hex for _ in batch]
    elif isinstance(rid, str):
        rids = ["%s_%d" % (rid, i) for i in range(len(batch))]
    elif len(rid) != len(batch):
        raise ValueError("The specified rids length mismatch with the batch_size for batch processing.")
    else:
        rids = list(rid)
    sp = body.get("sampling_params") or {}
    sps = list(sp) if isinstance(sp, list) else [dict(sp) for _ in batch]
    if len(sps) != len(batch):
        raise ValueError("The specified sampling_params length mismatch with the batch_size.")
    return rids, batch, sps, single


class Job:
    """One request waiting for its forward pass."""

    def __init__(self, rid, ids):
        self.rid, self.ids, self.arrived = rid, ids, time.time()
        self.done = threading.Event()
        self.output_id = 0


class Engine:
    """Runs the passes: a scheduler thread takes what has arrived (at most max_batch) and
    runs it as one forward of the patched mock (or only records it)."""

    def __init__(self, args):
        self.args = args
        self.jobs = queue.Queue()
        self.passes = 0
        self.log = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if args.log else None
        self.model = None
        if args.patched_mock:
            self._build(args.patched_mock)
        self.thread = threading.Thread(target=self._loop, name="scheduler", daemon=True)
        self.thread.start()

    def _build(self, path):
        import importlib.util

        import torch

        fake = tempfile.mkdtemp(prefix="standin-sglang-")
        atexit.register(shutil.rmtree, fake, True)  # Python has imported it by then
        files = {
            "sglang/__init__.py": "",
            "sglang/srt/__init__.py": "",
            "sglang/srt/layers/__init__.py": "",
            "sglang/srt/distributed/__init__.py": "",
            "sglang/srt/managers/__init__.py": "",
            # one process, no parallelism: every rank 0; chunked prefill off (-1)
            "sglang/srt/server_args.py": "import types\ndef get_global_server_args():\n"
            "    return types.SimpleNamespace(chunked_prefill_size=%d)\n" % (self.args.chunk or -1),
            "sglang/srt/runtime_context.py": "class _P:\n    attn_tp_rank = 0\n    attn_dp_rank = 0\n"
            "def get_parallel():\n    return _P()\n",
            "sglang/srt/layers/dp_attention.py": "def get_attention_tp_rank():\n    return 0\n"
            "def get_attention_dp_rank():\n    return 0\n",
            "sglang/srt/distributed/parallel_state.py": "def get_tensor_model_parallel_rank():\n    return 0\n",
        }
        for rel, text in files.items():
            os.makedirs(os.path.join(fake, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(fake, rel), "w") as f:
                f.write(text)
        sys.path.insert(0, fake)
        os.environ["SGLANG_HS_DUMP_DIR"] = self.args.dump_dir
        spec = importlib.util.spec_from_file_location("standin_patched_deepseek_v2", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if not hasattr(mod, "_pysplice_hs_dump"):
            sys.exit("%s is not patched (no _pysplice_hs_dump)" % path)
        torch.manual_seed(1234)
        model = mod.DeepseekV2ForCausalLM(mod.MockConfig(vocab_size=self.args.vocab_size, hidden_size=self.args.hidden_size))
        self.torch, self.mod = torch, mod
        self.model = model.to(dtype=torch.bfloat16).eval()

    def submit(self, jobs):
        for j in jobs:
            self.jobs.put(j)

    def _take(self):
        first = self.jobs.get()
        if first is None:
            return None
        batch = [first]
        deadline = time.time() + 0.002  # what arrives within 2 ms joins the pass
        while len(batch) < self.args.max_batch:
            try:
                j = self.jobs.get(timeout=max(0.0, deadline - time.time()))
            except queue.Empty:
                break
            if j is None:
                self.jobs.put(None)
                break
            batch.append(j)
        return batch

    def _loop(self):
        while True:
            batch = self._take()
            if batch is None:
                return
            if self.args.delay:
                time.sleep(self.args.delay)
            self.passes += 1
            try:
                if self.model is not None:
                    self._forward(batch)
            finally:
                for j in batch:
                    if self.log is not None:
                        # One write a line: the tests poll this file while it grows.
                        line = json.dumps({"rid": j.rid, "input_ids": j.ids, "pass": self.passes}) + "\n"
                        os.write(self.log, line.encode())
                    j.done.set()

    def _forward(self, batch):
        # With --chunk N, SGLang's chunked prefill: passes of at most N tokens, each request's
        # next piece in arrival order, its prefix the pieces before (extend_prefix_lens_cpu).
        if not self.args.chunk:
            self._pass(batch, [0] * len(batch), [len(j.ids) for j in batch])
            return
        done = [0] * len(batch)
        while True:
            budget, take = self.args.chunk, []
            for k, j in enumerate(batch):
                n = min(len(j.ids) - done[k], budget)
                if n > 0:
                    take.append((k, n))
                    budget -= n
            if not take:
                return
            self._pass([batch[k] for k, _ in take], [done[k] for k, _ in take], [n for _, n in take])
            for k, n in take:
                done[k] += n

    def _pass(self, jobs, starts, lens):
        torch, mod = self.torch, self.mod
        ids = torch.tensor([t for j, s, n in zip(jobs, starts, lens) for t in j.ids[s : s + n]], dtype=torch.long)
        positions = torch.cat([torch.arange(s, s + n) for s, n in zip(starts, lens)])
        fb = mod.ForwardBatch(
            forward_mode=mod.ForwardMode.EXTEND,
            input_ids=ids,
            positions=positions,
            extend_seq_lens_cpu=lens,
            extend_prefix_lens_cpu=starts,
            rids=[j.rid for j in jobs],
            orig_seq_lens=[len(j.ids) for j in jobs],
        )
        with torch.no_grad():
            out = self.model(ids, positions, fb)
        last = torch.cumsum(torch.tensor(lens), 0) - 1
        for j, tok in zip(jobs, out.next_token_logits[last].float().argmax(-1).tolist()):
            j.output_id = tok

    def stop(self):
        self.jobs.put(None)
        self.thread.join()


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.inflight = set()
        self.requests = 0
        self.closing = False
        self.access = open(args.access_log, "a", buffering=1) if args.access_log else None
        self.engine = Engine(args)


STATE = None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""

    def log_message(self, fmt, *args):  # stdout is the test's; --access-log FILE records the requests
        if STATE.access:
            with STATE.lock:
                STATE.access.write("%s\n" % (fmt % args))

    def _send(self, status, obj=None, ctype="application/json"):
        body = b"" if obj is None else (obj if isinstance(obj, bytes) else json.dumps(obj).encode())
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?")[0]
        args = STATE.args
        if path in ("/health", "/health_generate", "/ready"):
            return self._send(503 if STATE.closing else 200)
        if path in ("/model_info", "/get_model_info"):
            return self._send(200, {
                "model_path": args.model_path, "served_model_name": args.model_path,
                "tokenizer_path": args.model_path, "is_generation": True,
                "preferred_sampling_params": None, "weight_version": "default",
                "load_format": "auto", "reasoning_parser": None, "tool_call_parser": None,
                "disaggregation_mode": "null", "has_image_understanding": False,
                "has_audio_understanding": False, "model_type": "deepseek_v3",
                "architectures": ["DeepseekV3ForCausalLM"],
            })
        if path in ("/server_info", "/get_server_info"):
            return self._send(200, {
                "model_path": args.model_path, "tokenizer_path": args.model_path,
                "context_length": args.context_length, "chunked_prefill_size": -1,
                "disable_radix_cache": True, "disable_cuda_graph": True, "skip_server_warmup": True,
                "disable_overlap_schedule": True, "dp_size": 1, "tp_size": 1,
                "max_total_num_tokens": args.context_length * args.max_batch,
                "max_req_input_len": args.context_length - 5,
                "internal_states": [{"last_gen_throughput": 0.0}],
                "version": RELEASE, "frontend": "python", "launch_command": " ".join(sys.argv),
            })
        if path == "/v1/models":
            return self._send(200, {"object": "list", "data": [{
                "id": args.model_path, "object": "model", "created": int(time.time()),
                "owned_by": "sglang", "root": args.model_path, "max_model_len": args.context_length}]})
        if path == "/get_load":
            return self._send(200, [{"dp_rank": 0, "num_reqs": len(STATE.inflight), "num_waiting_reqs": 0, "num_tokens": 0}])
        self._send(404, {"detail": "Not Found"})

    def do_POST(self):
        path = self.path.split("?")[0]
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        if path == "/flush_cache":
            return self._send(200, b"Cache flushed.\n", "text/plain")
        if path != "/generate":
            return self._send(404, {"detail": "Not Found"})
        with STATE.lock:
            k, STATE.requests = STATE.requests, STATE.requests + 1
        if k < STATE.args.fail_first:
            if k % 2 == 0:
                return self._send(503)
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if STATE.closing:
            return self._send(503)
        try:
            body = json.loads(raw)
        except ValueError as e:
            # FastAPI's RequestValidationError for a body that does not parse, as SGLang's
            # handler renders it (ErrorResponse, 400)
            err = [{"type": "json_invalid", "loc": ["body", getattr(e, "pos", 0)], "msg": "JSON decode error",
                    "input": {}, "ctx": {"error": getattr(e, "msg", str(e))}}]
            return self._send(400, {"object": "error", "message": str(err), "type": "Bad Request",
                                    "param": None, "code": 400})
        try:
            check_contract(body)
        except ContractError as e:
            return self._send(400, {"error": str(e)})
        try:
            rids, batch, sps, single = normalize(body)
            jobs = self._admit(rids, batch, sps)
        except ValueError as e:
            return self._send(400, {"error": {"message": str(e)}})
        try:
            STATE.engine.submit(jobs)
            for j in jobs:
                j.done.wait()
        finally:
            with STATE.lock:
                for j in jobs:
                    STATE.inflight.discard(j.rid)
        outs = [self._out(j) for j in jobs]
        if body.get("stream"):
            data = b"".join(b"data: " + json.dumps(o).encode() + b"\n\n" for o in outs) + b"data: [DONE]\n\n"
            return self._send(200, data, "text/event-stream")
        self._send(200, outs[0] if single else outs)

    def _admit(self, rids, batch, sps):
        """The release's _validate_one_request: length, total, vocabulary, then duplicate rids."""
        ctx, vocab = STATE.args.context_length, STATE.args.vocab_size
        for ids, sp in zip(batch, sps):
            n = len(ids)
            if n >= ctx:
                raise ValueError("The input (%d tokens) is longer than the model's context length (%d tokens)." % (n, ctx))
            m = sp.get("max_new_tokens")
            if m is not None and m + n > ctx:
                raise ValueError(
                    "Requested token count exceeds the model's maximum context length of %d tokens. You requested a "
                    "total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please "
                    "reduce the number of tokens in the input messages or the completion to fit within the limit."
                    % (ctx, m + n, n, m))
            bad = [t for t in ids if t < 0 or t >= vocab]
            if bad:
                raise ValueError("Input ids contain out-of-vocabulary token id %d; valid range is [0, %d)." % (bad[0], vocab))
        with STATE.lock:
            seen = set()
            for rid in rids:
                if rid in STATE.inflight or rid in seen:
                    raise ValueError("Duplicate request ID detected: %s" % rid)
                seen.add(rid)
            STATE.inflight |= seen
        return [Job(r, ids) for r, ids in zip(rids, batch)]

    def _out(self, j):
        now = time.time()
        return {"text": "", "output_ids": [j.output_id], "meta_info": {
            "id": j.rid, "finish_reason": {"type": "length", "length": 1}, "prompt_tokens": len(j.ids),
            "weight_version": "default", "num_retractions": 0, "reasoning_tokens": 0,
            "completion_tokens": 1, "cached_tokens": 0, "e2e_latency": now - j.arrived,
            "response_sent_to_client_ts": now}}

    do_PUT = do_POST


def wait_idle(folder):
    """docs/sglang.md's wait-until-idle step, run as written there."""
    with open(os.path.join(REPO, "docs", "sglang.md")) as f:
        m = re.search(r"<<'WAIT_IDLE'\n(.*?)\nWAIT_IDLE\n", f.read(), re.S)
    if not m:
        print("no WAIT_IDLE block in docs/sglang.md", file=sys.stderr)
        return 2
    return subprocess.run([sys.executable, "-", folder], input=m.group(1).encode()).returncode


class Quiet(http.server.ThreadingHTTPServer):
    """A client that goes away mid-answer (a sender killed on purpose) is not an error here."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def main(argv=None):
    global STATE
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000, help="0: pick a free port")
    p.add_argument("--dump-dir", help="SGLANG_HS_DUMP_DIR for --patched-mock")
    p.add_argument("--patched-mock", help="the patched mock_deepseek_v2.py (needs PyTorch)")
    p.add_argument("--vocab-size", type=int, default=4096, help="the mock's vocabulary (ids must be below)")
    p.add_argument("--max-batch", type=int, default=8, help="requests per forward pass at most")
    p.add_argument("--hidden-size", type=int, default=16, help="the mock's width (each sample holds 4 x this bf16 values a token)")
    p.add_argument("--chunk", type=int, default=0, help="chunked prefill: passes of at most this many tokens (0: off)")
    p.add_argument("--context-length", type=int, default=4096)
    p.add_argument("--fail-first", type=int, default=0, help="fail the first K /generate requests transiently")
    p.add_argument("--delay", type=float, default=0.0, help="seconds each pass takes")
    p.add_argument("--log", help="append one JSON line per accepted request")
    p.add_argument("--access-log", help="append one line per HTTP request (method, path, status)")
    p.add_argument("--model-path", default="standin/tiny-deepseek", help="the name /model_info reports")
    args = p.parse_args(argv)
    if args.patched_mock and not args.dump_dir:
        p.error("--patched-mock needs --dump-dir")
    if args.max_batch < 1 or args.context_length < 1:
        p.error("--max-batch and --context-length must be at least 1")
    STATE = State(args)
    http.server.ThreadingHTTPServer.daemon_threads = True
    server = Quiet((args.host, args.port), Handler)
    stop = threading.Event()

    def on_signal(signum, frame):
        STATE.closing = True
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    print("listening on http://%s:%d" % (host, port), flush=True)
    stop.wait()
    # finish what is in flight, then let the dump drain before the process goes
    deadline = time.time() + 60
    while STATE.inflight and time.time() < deadline:
        time.sleep(0.05)
    server.shutdown()
    STATE.engine.stop()
    rc = wait_idle(args.dump_dir) if args.patched_mock else 0
    print("stopped after %d passes" % STATE.engine.passes, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
