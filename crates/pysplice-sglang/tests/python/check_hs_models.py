#!/usr/bin/env python3
"""An independent check, with CPython's `ast`, of an SGLang models folder patched by the
hidden-state dump for any architecture (`sglang_hs_dump --arch ...`). It shares no code
with pysplice; it reuses only the per-function checks of crates/pysplice-sglang/tests/python/check_hs_dump.py.

    python3 crates/pysplice-sglang/tests/python/check_hs_models.py PATCHED_DIR ORIGINAL_DIR ARCH [ARCH ...]

For each architecture (a class listed in some module's EntryClass), it finds by itself:
  - the class and its bases (by name, through the module's imports);
  - the model it holds: `self.model = ...` / `self.language_model = ...` in the methods
    of the class and its bases, where the value constructs a class by name, through a
    method that returns one (`self._init_model(...)`), a class attribute
    (`self.body_cls(...)`), an `__init__` parameter (its default, or what a subclass's
    `super().__init__(...)` passes) or a local variable; followed until a class (or a
    base) assigns `self.layers_to_capture`;
  - the forward that runs for that model (its own or the first base's that defines one).
Then it checks:
  forward   every return outside `if not self.pp_group.is_last_rank:` passes its value,
            unchanged from the original file, through exactly one
            `_pysplice_hs_dump(self, <input_ids>, <forward_batch>, value)` after the last
            final-norm call; proxy returns do not; at least one wrapped value carries the
            aux states (mentions `aux_hidden_states`); forward calls the dump nowhere else.
  init      the `__init__` that runs for the model assigns `self._hs_dump_dir` from
            SGLANG_HS_DUMP_DIR and `self._hs_dump_count`.
  capture   the `__init__` that runs for the architecture calls
            `self.set_eagle3_layers_to_capture` under an `if` reading SGLANG_HS_DUMP_DIR.
  names     every patched file binds the helpers at module level and imports
            errno, os, torch, logging.
Prints one JSON list (one verdict per architecture), exit 0 when all are ok, 1 otherwise.

    python3 crates/pysplice-sglang/tests/python/check_hs_models.py --batch JOBS.json

checks many folders in one process: JOBS.json is a list of [PATCHED_DIR, ORIGINAL_DIR, [ARCH,
...]]; prints one JSON list of verdict lists, one per job, exit 0 when all are ok. A file text
met in several folders (SGLang releases share most of their model files) is parsed once.
"""

import ast
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_hs_dump as single  # noqa: E402

ENV = single.ENV
DUMP = single.DUMP


# Parsed trees by file text: the checks only read the trees, so folders share them.
_TREES = {}
# Per tree (by its id; `_TREES` keeps every tree alive), found once: the classes, which every
# check asks for again, and the module-level names check, which many architectures and releases
# share a file for.
_CLASSES = {}
_NAMES = {}


def check_module_names(tree):
    if id(tree) not in _NAMES:
        _NAMES[id(tree)] = single.check_module_names(tree)
    return _NAMES[id(tree)]


def parse(text):
    if text not in _TREES:
        try:
            _TREES[text] = ast.parse(text)
        except SyntaxError:
            _TREES[text] = None
    return _TREES[text]


class Trees:
    """A folder's modules by name, each parsed the first time a check asks for it: most checks
    touch a few modules of a folder of hundreds. A module whose text does not parse is absent,
    as if the file were not there."""

    def __init__(self, root):
        self.paths = {n[:-3]: os.path.join(root, n) for n in sorted(os.listdir(root)) if n.endswith(".py")}
        self.texts = {}

    def text(self, module):
        if module not in self.texts:
            with open(self.paths[module], encoding="utf-8") as f:
                self.texts[module] = f.read()
        return self.texts[module]

    def __contains__(self, module):
        return module in self.paths and parse(self.text(module)) is not None

    def __getitem__(self, module):
        tree = parse(self.text(module)) if module in self.paths else None
        if tree is None:
            raise KeyError(module)
        return tree

    def naming_after(self, first, name):
        """(module, tree) in name order for the modules whose text holds `name` somewhere after
        the first `first`: a cheap filter that keeps every module where an assignment to `first`
        could name `name` (its value comes after its target)."""
        for module in self.paths:
            text = self.text(module)
            at = text.find(first)
            if at >= 0 and text.find(name, at + len(first)) >= 0:
                tree = parse(text)
                if tree is not None:
                    yield module, tree


class Folder:
    def __init__(self, root):
        self.root = root
        self.trees = Trees(root)

    def classes(self, module):
        tree = self.trees[module]
        if id(tree) not in _CLASSES:
            _CLASSES[id(tree)] = {n.name: n for n in single.walk(tree) if isinstance(n, ast.ClassDef)}
        return _CLASSES[id(tree)]

    def imported(self, module, name):
        """(module, name) that `name` is imported from in `module`, or None."""
        for n in self.trees[module].body:
            if isinstance(n, ast.ImportFrom):
                src = (n.module or "").split(".")[-1]
                for a in n.names:
                    if (a.asname or a.name) == name:
                        if src in self.trees:
                            return src, a.name
                        if a.name in self.trees:  # from sglang.srt.models import qwen3_5
                            return a.name, None
        return None

    def resolve(self, module, dotted):
        """(module, ClassDef) for a class name or `mod.Class` as seen from `module`."""
        parts = dotted.split(".")
        if len(parts) == 2:
            target = self.imported(module, parts[0])
            mod = target[0] if target else parts[0]
            if mod in self.trees and parts[1] in self.classes(mod):
                return mod, self.classes(mod)[parts[1]]
            return None
        name = parts[0]
        if name in self.classes(module):
            return module, self.classes(module)[name]
        target = self.imported(module, name)
        if target and target[1] and target[1] in self.classes(target[0]):
            return target[0], self.classes(target[0])[target[1]]
        return None

    def mro(self, module, cls):
        """The class and its bases found in the folder, depth first, without repeats."""
        out, todo = [], [(module, cls)]
        while todo:
            m, c = todo.pop(0)
            if any(c is x for _, x in out):
                continue
            out.append((m, c))
            for b in c.bases:
                try:
                    text = ast.unparse(b)
                except Exception:
                    continue
                found = self.resolve(m, text)
                if found:
                    todo.append(found)
        return out

    def method(self, module, cls, name):
        """(module, class, def) of the method that runs for `cls`."""
        for m, c in self.mro(module, cls):
            fn = single.find_method(c, name)
            if fn is not None:
                return m, c, fn
        return None

    def producing_forward(self, module, cls):
        """The forward whose returns give the model's value: the one that runs, or, while it
        only returns `super().forward(...)`, the next base's. Also the pass-through ones."""
        chain = [(m, c, single.find_method(c, "forward")) for m, c in self.mro(module, cls)]
        chain = [x for x in chain if x[2] is not None]
        passed = []
        for m, c, fn in chain:
            values = [r.value for r in single.returns_of(fn)]
            through = values and all(
                isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "forward"
                and isinstance(v.func.value, ast.Call) and ast.unparse(v.func.value.func) == "super"
                for v in values
            )
            if not through:
                return (m, c, fn), passed
            passed.append((m, c, fn))
        return None, passed

    def assigns(self, module, cls, attr):
        for _, c in self.mro(module, cls):
            for n in single.walk(c):
                if isinstance(n, ast.Assign) and any(single.is_self_attr(t, attr) for t in n.targets):
                    return True
        return False

    def entry(self, name):
        for module, tree in self.trees.naming_after("EntryClass", name):
            for n in tree.body:
                if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in n.targets):
                    names = [ast.unparse(e) for e in (n.value.elts if isinstance(n.value, (ast.List, ast.Tuple)) else [n.value])]
                    if name in names:
                        found = self.resolve(module, name)
                        if found:
                            return found
        return None

    # -- what a class holds -------------------------------------------------------------

    def held(self, module, cls):
        out = []
        for m, c in self.mro(module, cls):
            for fn in [n for n in c.body if isinstance(n, ast.FunctionDef)]:
                for n in single.walk_local(fn):
                    if isinstance(n, ast.Assign) and any(
                        single.is_self_attr(t, "model") or single.is_self_attr(t, "language_model") for t in n.targets
                    ):
                        out.extend(self.constructed(module, cls, m, fn, n.value))
        return out

    def constructed(self, module, cls, m, fn, value):
        if isinstance(value, ast.IfExp):
            return self.constructed(module, cls, m, fn, value.body) + self.constructed(module, cls, m, fn, value.orelse)
        if not isinstance(value, ast.Call):
            return []
        f = value.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            found = self.method(module, cls, f.attr)
            if found:
                om, oc, ofn = found
                return [x for r in single.walk_local(ofn) if isinstance(r, ast.Return) and r.value is not None
                        for x in self.constructed(module, cls, om, ofn, r.value)]
            for bm, bc in self.mro(module, cls):
                for s in bc.body:
                    if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == f.attr for t in s.targets):
                        r = self.resolve(bm, ast.unparse(s.value))
                        return [r] if r else []
            return []
        if isinstance(f, ast.Name):
            for s in single.walk_local(fn):
                if isinstance(s, ast.ImportFrom) and any((a.asname or a.name) == f.id for a in s.names):
                    src = (s.module or "").split(".")[-1]
                    name = [a.name for a in s.names if (a.asname or a.name) == f.id][0]
                    if src in self.trees and name in self.classes(src):
                        return [(src, self.classes(src)[name])]
                if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == f.id for t in s.targets):
                    r = self.resolve(m, ast.unparse(s.value)) if isinstance(s.value, (ast.Name, ast.Attribute)) else None
                    return [r] if r else []
            if f.id in single.params(fn):
                return [r for r in [self.parameter(module, cls, fn, f.id, m)] if r]
        try:
            r = self.resolve(m, ast.unparse(f))
        except Exception:
            r = None
        return [r] if r else []

    def parameter(self, module, cls, fn, name, m):
        """The class a parameter of `fn` is bound to when `cls` is built: what the most derived
        `__init__` on the way passes down through `super().__init__`, or the default."""
        chain = [(mm, c, single.find_method(c, fn.name)) for mm, c in self.mro(module, cls)]
        chain = [x for x in chain if x[2] is not None]
        env = {}
        for i, (mm, _c, f) in enumerate(chain):
            names = single.params(f)
            defaults = dict(zip(names[len(names) - len(f.args.defaults):], f.args.defaults))
            new = {k: (mm, v) for k, v in defaults.items()}
            if i > 0:
                pm, pc, pf = chain[i - 1]
                for call in single.walk_local(pf):
                    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == fn.name
                            and isinstance(call.func.value, ast.Call) and ast.unparse(call.func.value.func) == "super"):
                        for j, arg in enumerate(call.args):
                            if j + 1 < len(names):
                                new[names[j + 1]] = env.get(arg.id, (pm, arg)) if isinstance(arg, ast.Name) else (pm, arg)
                        for k in call.keywords:
                            if k.arg:
                                new[k.arg] = env.get(k.value.id, (pm, k.value)) if isinstance(k.value, ast.Name) else (pm, k.value)
            env = new
            if f is fn:
                break
        if name not in env:
            return None
        mm, expr = env[name]
        return self.resolve(mm, ast.unparse(expr))

    def backbone(self, module, cls):
        seen, todo = [], [(module, cls)]
        while todo:
            m, c = todo.pop(0)
            if any(c is x for _, x in seen):
                continue
            seen.append((m, c))
            if self.assigns(m, c, "layers_to_capture"):
                return m, c
            todo.extend(self.held(m, c))
        return None


def check_forward(fn, original_fn):
    errors = []
    names = single.params(fn)
    want = ["self", names[1] if len(names) > 1 else None, names[3] if len(names) > 3 else None]
    proxy = single.proxy_returns(fn)
    norms = single.norm_sites(fn)
    final = max(norms) if norms else None
    if final is None:
        errors.append("no final norm call in forward")
    wrapped, values, aux = [], [], False
    dump_calls = [n for n in single.walk_local(fn) if single.is_dump_call(n)]
    for r in single.returns_of(fn):
        if id(r) in proxy:
            if r.value is not None and single.mentions_dump(r.value):
                errors.append("line %d: the proxy return goes through the dump" % r.lineno)
            values.append(r.value)
            continue
        call, value = single.dumped_value(r.value) if r.value is not None else (None, None)
        if call is None:
            errors.append("line %d: return does not go through %s" % (r.lineno, DUMP))
            values.append(r.value)
            continue
        inner = [n for n in single.walk(r.value) if single.is_dump_call(n)]
        if len(inner) != 1:
            errors.append("line %d: %d dump calls, expected exactly one" % (r.lineno, len(inner)))
        args = [ast.unparse(a) for a in call.args]
        if args[:3] != want or len(args) != 4:
            errors.append("line %d: dump called as (%s), expected (%s, value)" % (r.lineno, ", ".join(args), ", ".join(map(str, want))))
        if final is not None and r.lineno <= final:
            errors.append("line %d: wrapped return is not after the final norm (line %d)" % (r.lineno, final))
        aux |= "aux_hidden_states" in ast.unparse(value)
        wrapped.append(r.lineno)
        values.append(value)
    if not wrapped:
        errors.append("no return goes through the dump")
    if len(dump_calls) != len(wrapped):
        errors.append("forward calls the dump %d times, on %d returns" % (len(dump_calls), len(wrapped)))
    if "aux_hidden_states" in ast.unparse(original_fn) and not aux:
        errors.append("no wrapped return passes the aux states")
    before = [r.value for r in single.returns_of(original_fn)]
    if len(before) != len(values) or not all((a is None and b is None) or single.same(a, b) for a, b in zip(before, values)):
        errors.append("the values returned through the dump differ from the original return values")
    return dict(ok=not errors, wrapped=wrapped, final_norm_line=final, aux=aux, errors=errors)


def check_arch(patched, original, arch):
    out = dict(arch=arch, ok=False)
    entry = patched.entry(arch)
    if entry is None:
        out["error"] = "no EntryClass %s" % arch
        return out
    module, cls = entry
    model = patched.backbone(module, cls)
    if model is None:
        out["error"] = "%s holds no model that assigns self.layers_to_capture" % arch
        return out
    mm, mc = model
    fwd, passed = patched.producing_forward(mm, mc)
    ofwd = original.producing_forward(mm, original.classes(mm)[mc.name])[0] if mm in original.trees else None
    if fwd is None or ofwd is None:
        out["error"] = "no forward for %s" % mc.name
        return out
    out["model"] = "%s.%s" % (mm, mc.name)
    out["forward"] = "%s.%s.forward" % (fwd[0], fwd[1].name)
    checks = dict(forward=check_forward(fwd[2], ofwd[2]))
    for m, c, fn in passed:
        if any(single.is_dump_call(n) for n in single.walk_local(fn)):
            checks["forward"]["errors"].append("%s.%s.forward hands over to super() but dumps too" % (m, c.name))
            checks["forward"]["ok"] = False
    init = patched.method(mm, mc, "__init__")
    init_ok = init is not None and any(
        isinstance(s, ast.Assign) and any(single.is_self_attr(t, "_hs_dump_dir") for t in s.targets) and ENV in ast.unparse(s.value)
        for s in init[2].body
    ) and any(isinstance(s, ast.Assign) and any(single.is_self_attr(t, "_hs_dump_count") for t in s.targets) for s in init[2].body)
    checks["init"] = dict(ok=bool(init_ok), where="%s.%s.__init__" % (init[0], init[1].name) if init else None,
                          errors=[] if init_ok else ["the model's __init__ does not set up the dump"])
    cinit = patched.method(module, cls, "__init__")
    gated = []
    if cinit is not None:
        for n in single.walk_local(cinit[2]):
            if isinstance(n, ast.Call) and single.is_self_attr(n.func, "set_eagle3_layers_to_capture"):
                if any(ENV in ast.unparse(i.test) for i in single.enclosing_ifs(cinit[2], n)):
                    gated.append(n.lineno)
    checks["capture"] = dict(ok=bool(gated), where="%s.%s.__init__" % (cinit[0], cinit[1].name) if cinit else None,
                             errors=[] if gated else ["no guarded set_eagle3_layers_to_capture call"])
    files = sorted({fwd[0], init[0] if init else mm, cinit[0] if cinit else module})
    names_errors = []
    for f in files:
        r = check_module_names(patched.trees[f])
        names_errors += ["%s.py: %s" % (f, e) for e in r["errors"]]
    checks["names"] = dict(ok=not names_errors, files=[f + ".py" for f in files], errors=names_errors)
    out["checks"] = checks
    out["ok"] = all(c["ok"] for c in checks.values())
    return out


def main(argv):
    if len(argv) == 3 and argv[1] == "--batch":
        with open(argv[2], encoding="utf-8") as f:
            jobs = json.load(f)
        results = []
        for patched, original, archs in jobs:
            patched, original = Folder(patched), Folder(original)
            results.append([check_arch(patched, original, a) for a in archs])
        print(json.dumps(results, indent=1))
        return 0 if all(v["ok"] for r in results for v in r) else 1
    if len(argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    patched, original = Folder(argv[1]), Folder(argv[2])
    verdicts = [check_arch(patched, original, a) for a in argv[3:]]
    print(json.dumps(verdicts, indent=1))
    return 0 if all(v["ok"] for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
