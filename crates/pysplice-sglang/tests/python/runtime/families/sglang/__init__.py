"""Stand-in package for pysplice runtime tests; not SGLang."""
