"""The hidden-state dump that the recipe sglang-hs-dump injects into SGLang's model files, as a package.

The recipes (crates/pysplice-sglang/recipes/sglang_hs_dump.toml and sglang_hs_dump_models.toml)
carry this code as text: the `dump-helpers` hook is HEADER followed by the definitions that
HELPERS names, in that order, each exactly as its module writes it; the bodies of the functions
of hooks.py are the hooks of the same names. `python3 crates/pysplice-sglang/python/recipe_code.py
--write` writes them into the TOML files and, without --write, checks that they are there (CI
does). The code of a module is the code of the patched file, so it is template text: `{env}`,
`{queue_env}` ... are the recipe's [vars], filled when the recipe is applied (they stay as they
are here), and a brace is always a slot (the code holds no literal ones).

In the patched file every definition shares the model file's namespace (its imports: errno,
logging, os, torch); here each module imports what it uses, so that the parts that need no
PyTorch import and run without it (tests/py_hs_dump_parts_test.py).
"""

# The comment lines that open the dump-helpers block.
HEADER = """\
# Hidden-state dump for EAGLE-3 / SpecForge offline training data (pysplice
# recipe sglang-hs-dump). Runs only when ${env} is set at model build time,
# and must never break serving: the forward result always passes through as is.
"""

# The definitions of the dump-helpers block, in the order of the patched file: MODULE.NAME.
HELPERS = (
    "settings._pysplice_hs_is_draft",
    "parallel._pysplice_hs_ranks",
    "forward._pysplice_hs_dump",
    "forward._pysplice_hs_dump_batch",
    "sample._pysplice_hs_sample",
    "chunks._pysplice_hs_stitch_how",
    "chunks._pysplice_hs_stitch_keys",
    "sample._pysplice_hs_probe",
    "sample._pysplice_hs_probe_row",
    "sample._pysplice_hs_alone",
    "writer._pysplice_hs_Writer",
    "writer._pysplice_hs_serial",
    "files._pysplice_hs_stem",
    "stitch._pysplice_hs_stitch_open",
    "stitch._pysplice_hs_stitch_add",
    "stitch._pysplice_hs_stitch_put",
    "stitch._pysplice_hs_stitch_run",
    "stitch._pysplice_hs_stitch_serve",
    "stitch._pysplice_hs_stitch_reserve",
    "stitch._pysplice_hs_stitch_publish",
    "stitch._pysplice_hs_stitch_unmap",
    "stitch._pysplice_hs_stitch_close",
    "stitch._pysplice_hs_publish_free",
    "archive._pysplice_hs_crc_mul",
    "archive._pysplice_hs_crc_combine",
    "archive._pysplice_hs_zip_layout",
    "archive._pysplice_hs_zip_descriptor",
    "archive._pysplice_hs_zip_end",
    "archive._pysplice_hs_Stored",
    "archive._pysplice_hs_Storage",
    "archive._pysplice_hs_storage_class",
    "archive._pysplice_hs_pickle",
    "parts._pysplice_hs_parts_add",
    "parts._pysplice_hs_parts_sample",
    "parts._pysplice_hs_parts_drop",
    "writer._pysplice_hs_pin",
    "writer._pysplice_hs_ring_early",
    "writer._pysplice_hs_size",
    "status._pysplice_hs_identity",
    "status._pysplice_hs_started",
    "debris._pysplice_hs_clean",
    "status._pysplice_hs_read_status",
    "parallel._pysplice_hs_chunk_size",
    "provenance._pysplice_hs_provenance",
    "provenance._pysplice_hs_sglang_version",
    "provenance._pysplice_hs_config_digest",
    "parallel._pysplice_hs_parallel",
    "chunks._pysplice_hs_complete",
    "settings._pysplice_hs_setup",
    "settings._pysplice_hs_show",
    "settings._pysplice_hs_layer_ids",
    "capture._pysplice_hs_backbones",
    "capture._pysplice_hs_capture_begin",
    "capture._pysplice_hs_snapshot",
    "capture._pysplice_hs_restore",
    "capture._pysplice_hs_capture_end",
    "forward._pysplice_hs_off",
    "files._pysplice_hs_open_dir",
    "files._pysplice_hs_write",
    "files._pysplice_hs_publish",
)

# The hooks whose code is the body of the function of the same name in hooks.py.
HOOKS = ("init", "capture")
