#!/usr/bin/env python3
"""An independent check, with CPython's `ast`, of deepseek_v2.py files patched by the
sglang-hs-dump recipe. It shares no code with pysplice: it reads the patched file the
way Python will run it.

    python3 crates/pysplice-sglang/tests/python/check_hs_dump.py PATCHED[::ORIGINAL] ...

Prints one JSON list, one verdict per file, and exits 0 when every verdict is ok,
1 otherwise (2 on bad usage). With ::ORIGINAL (the unpatched file), the values passed
through the dump are also compared with the original return values.

Checks, per file:
  returns      In DeepseekV2Model.forward, every `return` outside the
               `if not self.pp_group.is_last_rank:` branch passes its value through
               `_pysplice_hs_dump(self, <input_ids param>, <batch param>, value)`; the
               proxy returns inside that branch do not; every wrapped return starts
               after the end of the final norm (the last call in forward of
               `<x>.norm(...)` / `<x>.final_norm(...)` on `self` or `residual_batch`,
               or any call given `self.norm` as an argument).
  capture      In DeepseekV2ForCausalLM.__init__, when the class defines
               set_eagle3_layers_to_capture: a call of it, guarded by an `if` that
               reads SGLANG_HS_DUMP_DIR, after every `self.capture_aux_hidden_states =
               False` outside that guard (the hook's own reset when enabling capture
               fails lies inside it). When the class does not define it: no such call (skipped).
  module_names `_pysplice_hs_dump` and every other `_pysplice_hs_*` name the file uses
               are module-level functions (or classes); errno, os, torch and logging are bound by
               a module-level `import`, and not rebound at module level afterwards.
  init_end     DeepseekV2Model.__init__ ends with the init block: from the assignment
               of `self._hs_dump_dir` (read from SGLANG_HS_DUMP_DIR) to the last
               statement, `self._hs_dump_count = 0`, at most three statements, each
               about `_hs_dump`.
"""

import ast
import json
import sys

ENV = "SGLANG_HS_DUMP_DIR"
DUMP = "_pysplice_hs_dump"
MODULES = ("errno", "os", "torch", "logging")
PROXY_TEST = "not self.pp_group.is_last_rank"


def children(node):
    """What `ast.iter_child_nodes` gives, in its order, without its generator overhead: the
    checks walk hundreds of large trees."""
    out = []
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, ast.AST))
    return out


def walk(node):
    """What `ast.walk` gives, in its order (breadth first), faster."""
    todo = [node]
    i = 0
    while i < len(todo):
        n = todo[i]
        i += 1
        todo.extend(children(n))
        yield n


def walk_local(node):
    """Nodes under `node`, not descending into nested functions, lambdas or classes."""
    stack = children(node)
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(children(n))


def find_class(tree, name):
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    return found[0] if found else None


def find_method(cls, name):
    if cls is None:
        return None
    found = [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
    return found[-1] if found else None


def params(fn):
    a = fn.args
    return [p.arg for p in getattr(a, "posonlyargs", [])] + [p.arg for p in a.args]


def is_self_attr(node, attr):
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def is_dump_call(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == DUMP


def mentions_dump(node):
    return any(isinstance(n, ast.Name) and n.id == DUMP for n in walk(node))


def same(a, b):
    return a is not None and b is not None and ast.dump(a) == ast.dump(b)


def dumped_value(value):
    """(call, passthrough) when `value` sends the returned value through the dump:
    `_pysplice_hs_dump(...)` or `X if <gate> else _pysplice_hs_dump(..., X)` (either
    order), else (None, None)."""
    if is_dump_call(value):
        return value, value.args[-1] if value.args else None
    if isinstance(value, ast.IfExp):
        for call, other in ((value.orelse, value.body), (value.body, value.orelse)):
            if is_dump_call(call) and call.args and same(call.args[-1], other):
                return call, other
    return None, None


def norm_sites(fn):
    """End lines of the calls in `fn` that apply the final norm."""
    lines = []
    for n in walk_local(fn):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        by_name = (
            isinstance(f, ast.Attribute)
            and f.attr in ("norm", "final_norm")
            and isinstance(f.value, ast.Name)
            and f.value.id in ("self", "residual_batch")
        )
        given = any(is_self_attr(a, "norm") for a in list(n.args) + [k.value for k in n.keywords])
        if by_name or given:
            lines.append(n.end_lineno)
    return lines


def proxy_returns(fn):
    """Returns inside the body (not the else) of `if not self.pp_group.is_last_rank:`."""
    out = set()
    for n in walk_local(fn):
        if isinstance(n, ast.If) and ast.unparse(n.test).replace(" ", "") == PROXY_TEST.replace(" ", ""):
            for stmt in n.body:
                for m in [stmt] + list(walk_local(stmt)):
                    if isinstance(m, ast.Return):
                        out.add(id(m))
    return out


def returns_of(fn):
    return sorted((n for n in walk_local(fn) if isinstance(n, ast.Return)), key=lambda r: (r.lineno, r.col_offset))


def check_returns(tree, original):
    errors = []
    fn = find_method(find_class(tree, "DeepseekV2Model"), "forward")
    if fn is None:
        return dict(ok=False, errors=["no DeepseekV2Model.forward"])
    names = params(fn)
    want_ids = names[1] if len(names) > 1 else None
    want_batch = names[3] if len(names) > 3 else None
    proxy = proxy_returns(fn)
    norms = norm_sites(fn)
    final_norm = max(norms) if norms else None
    if final_norm is None:
        errors.append("no final norm call found in forward")
    wrapped, proxy_lines, passthrough = [], [], []
    for r in returns_of(fn):
        if id(r) in proxy:
            proxy_lines.append(r.lineno)
            if r.value is not None and mentions_dump(r.value):
                errors.append("line %d: the pipeline proxy return goes through the dump" % r.lineno)
            passthrough.append(r.value)
            continue
        call, value = dumped_value(r.value) if r.value is not None else (None, None)
        if call is None:
            errors.append("line %d: return does not pass its value through %s: %s" % (r.lineno, DUMP, ast.unparse(r)))
            passthrough.append(r.value)
            continue
        wrapped.append(r.lineno)
        passthrough.append(value)
        args = [ast.unparse(a) for a in call.args]
        if len(args) != 4 or args[:3] != ["self", want_ids, want_batch]:
            errors.append(
                "line %d: %s(%s) should be called as (self, %s, %s, value)"
                % (r.lineno, DUMP, ", ".join(args), want_ids, want_batch)
            )
        if final_norm is not None and r.lineno <= final_norm:
            errors.append("line %d: wrapped return is not after the final norm (line %d)" % (r.lineno, final_norm))
    if not wrapped:
        errors.append("no return of forward goes through %s" % DUMP)
    if original is not None:
        ofn = find_method(find_class(original, "DeepseekV2Model"), "forward")
        before = [r.value for r in returns_of(ofn)] if ofn is not None else []
        if len(before) != len(passthrough) or not all(
            (a is None and b is None) or same(a, b) for a, b in zip(before, passthrough)
        ):
            errors.append("the values returned (through the dump) differ from the original return values")
    return dict(
        ok=not errors,
        wrapped=wrapped,
        proxy=proxy_lines,
        final_norm_line=final_norm,
        params=[want_ids, want_batch],
        errors=errors,
    )


def enclosing_ifs(fn, target):
    """The `if` statements of `fn` whose body or else contains `target`."""
    out = []
    for n in walk_local(fn):
        if isinstance(n, ast.If) and any(m is target for m in walk_local(n)):
            out.append(n)
    return out


def check_capture(tree):
    cls = find_class(tree, "DeepseekV2ForCausalLM")
    init = find_method(cls, "__init__")
    if init is None:
        return dict(ok=False, errors=["no DeepseekV2ForCausalLM.__init__"])
    has_method = find_method(cls, "set_eagle3_layers_to_capture") is not None
    calls = [
        n
        for n in walk_local(init)
        if isinstance(n, ast.Call) and is_self_attr(n.func, "set_eagle3_layers_to_capture")
    ]
    gated = [c for c in calls if any(ENV in ast.unparse(i.test) for i in enclosing_ifs(init, c))]
    guards = [i for c in gated for i in enclosing_ifs(init, c) if ENV in ast.unparse(i.test)]
    inside_guard = {id(m) for g in guards for m in walk_local(g)}
    flags, resets = [], []
    for n in walk_local(init):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
        value = getattr(n, "value", None)
        if (
            any(is_self_attr(t, "capture_aux_hidden_states") for t in targets)
            and isinstance(value, ast.Constant)
            and value.value is False
        ):
            # The hook's own reset when enabling capture fails sits inside its guard.
            (resets if id(n) in inside_guard else flags).append(n.lineno)
    errors = []
    if not has_method:
        if gated:
            errors.append("the class has no set_eagle3_layers_to_capture, but __init__ calls it")
        return dict(
            ok=not errors,
            status="skipped",
            reason="DeepseekV2ForCausalLM defines no set_eagle3_layers_to_capture",
            errors=errors,
        )
    if not gated:
        errors.append("no call of self.set_eagle3_layers_to_capture guarded by %s in __init__" % ENV)
    for c in gated:
        late = [line for line in flags if line >= c.lineno]
        if late:
            errors.append(
                "line %d: capture call comes before `self.capture_aux_hidden_states = False` (line %s)"
                % (c.lineno, ", ".join(map(str, late)))
            )
    return dict(
        ok=not errors,
        status="placed",
        call_lines=[c.lineno for c in gated],
        flag_false_lines=flags,
        reset_on_failure_lines=resets,
        errors=errors,
    )


def bound_names(stmt):
    """Names a module-level statement binds, with whether it is an `import` of a module."""
    if isinstance(stmt, ast.Import):
        return [((a.asname or a.name.split(".")[0]), a.asname is None or a.asname == a.name) for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom):
        return [(a.asname or a.name, False) for a in stmt.names]
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(stmt.name, False)]
    out = []
    for n in walk(stmt):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.append((n.id, False))
    return out


def check_module_names(tree):
    errors = []
    defs = {n.name: n.lineno for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    used = sorted({n.id for n in walk(tree) if isinstance(n, ast.Name) and n.id.startswith("_pysplice_hs")})
    for name in sorted(set(used) | {DUMP}):
        if name not in defs:
            errors.append("%s is not a module-level function or class" % name)
    imports = {}
    for stmt in tree.body:
        for name, is_module_import in bound_names(stmt):
            if name not in MODULES:
                continue
            if is_module_import:
                imports.setdefault(name, stmt.lineno)
            elif name in imports:
                errors.append("line %d rebinds module-level `%s` (imported line %d)" % (stmt.lineno, name, imports[name]))
            else:
                errors.append("line %d binds `%s` before or instead of `import %s`" % (stmt.lineno, name, name))
    for name in MODULES:
        if name not in imports:
            errors.append("`import %s` is not a module-level statement" % name)
    return dict(ok=not errors, functions={k: defs[k] for k in sorted(set(used) | {DUMP}) if k in defs}, imports=imports, errors=errors)


def check_init_end(tree):
    init = find_method(find_class(tree, "DeepseekV2Model"), "__init__")
    if init is None:
        return dict(ok=False, errors=["no DeepseekV2Model.__init__"])
    body = init.body
    errors = []
    starts = [
        i
        for i, s in enumerate(body)
        if isinstance(s, ast.Assign) and any(is_self_attr(t, "_hs_dump_dir") for t in s.targets)
    ]
    if not starts:
        return dict(ok=False, errors=["__init__ never assigns self._hs_dump_dir at its top level"])
    start = starts[-1]
    block = body[start:]
    if ENV not in ast.unparse(block[0].value):
        errors.append("self._hs_dump_dir is not read from %s" % ENV)
    last = body[-1]
    if not (isinstance(last, ast.Assign) and any(is_self_attr(t, "_hs_dump_count") for t in last.targets)):
        errors.append("__init__ ends with line %d, not `self._hs_dump_count = 0`" % last.lineno)
    if len(block) > 3:
        errors.append("%d statements from self._hs_dump_dir to the end, expected 3" % len(block))
    foreign = [s.lineno for s in block if "_hs_dump" not in ast.unparse(s)]
    if foreign:
        errors.append("statements after the init block start: lines %s" % foreign)
    return dict(ok=not errors, block=[block[0].lineno, last.end_lineno], errors=errors)


def verdict(patched, original_path):
    text = open(patched, encoding="utf-8").read()
    try:
        compile(text, patched, "exec", dont_inherit=True)
        tree = ast.parse(text, patched)
    except SyntaxError as err:
        return dict(file=patched, ok=False, error="does not compile: %s" % err)
    original = None
    if original_path:
        original = ast.parse(open(original_path, encoding="utf-8").read(), original_path)
    checks = dict(
        returns=check_returns(tree, original),
        capture=check_capture(tree),
        module_names=check_module_names(tree),
        init_end=check_init_end(tree),
    )
    return dict(file=patched, ok=all(c["ok"] for c in checks.values()), checks=checks)


def main(argv):
    if len(argv) < 2 or any(a.startswith("-") for a in argv[1:]):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    verdicts = []
    for arg in argv[1:]:
        patched, _, original = arg.partition("::")
        verdicts.append(verdict(patched, original or None))
    print(json.dumps(verdicts, indent=1))
    return 0 if all(v["ok"] for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
