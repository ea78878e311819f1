#!/usr/bin/env python3
"""`python -m sglang.launch_server ARGS`, keeping the `intel_amx` attention backend on a CPU.

    python3 crates/pysplice-sglang/tests/python/real/launch.py ARGS...

Test-only. DeepSeek's MLA prefill runs on a CPU only through SGLang's `intel_amx` backend, whose
two attention kernels come from crates/pysplice-sglang/tests/python/real/standin/sgl_kernel. SGLang's launcher swaps that
backend for `torch_native` when the machine has no AMX ops; the resolved choice travels to the
scheduler in the server arguments, so undoing the swap here, in the launcher alone, is enough.
Every other argument and step is SGLang's own.
"""

import runpy
import sys


def _keep_intel_amx():
    try:  # 0.5.2x: a post-process pass of the server arguments
        from sglang.srt.arg_groups import attention_hook, overrides
    except ImportError:
        attention_hook = None
    if attention_hook is not None and hasattr(overrides, "_attention_backend_platform_fallbacks"):
        swap = overrides._attention_backend_platform_fallbacks

        def keep(view):
            if view.attention_backend == "intel_amx" and view.device == "cpu":
                return {}
            return swap(view)

        keep.__qualname__ = swap.__qualname__
        attention_hook._attention_backend_platform_fallbacks = keep
        passes = overrides.POST_PROCESS_PASSES
        passes[:] = [keep if p is swap else p for p in passes]
        return
    from sglang.srt import server_args  # 0.5.10 and older: one check in __post_init__

    server_args.cpu_has_amx_support = lambda: True


if __name__ == "__main__":
    _keep_intel_amx()
    sys.argv[0] = "sglang.launch_server"
    runpy.run_module("sglang.launch_server", run_name="__main__", alter_sys=True)
