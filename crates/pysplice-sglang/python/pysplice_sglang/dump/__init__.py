"""The hidden-state dump that the recipe sglang-hs-dump injects into SGLang's model files.

The recipes beside this file (sglang_hs_dump.toml, sglang_hs_dump_models.toml) take their code
from these modules: each `code-from` entry names a definition (`def`), copied into the patched
file exactly as its module writes it, or a function of hooks.py whose body is a hook's code
(`body`; a parameter after `self` becomes the patched method's parameter of that position).
The recipe orders the definitions as the patched file has them; docs/spec.md says how the
pieces are joined. The modules are the only copy: the programs compile them in
(pysplice_sglang::recipes::DUMP_CODE) and `pysplice apply --spec` reads them beside the recipe.

The code of a module is the code of the patched file, so it is template text: `{env}`,
`{queue_env}` ... are the recipe's [vars], filled when the recipe is applied (they stay as they
are here), and a brace is always a slot (the code holds no literal ones). In the patched file
every definition shares the model file's namespace (its imports: errno, logging, os, torch);
here each module imports what it uses, so that the parts that need no PyTorch import and run
without it (crates/pysplice-sglang/tests/python/hs_dump_parts_test.py). Anything else at a
module's top level would exist here but not in the patched file: that test refuses it.
"""
