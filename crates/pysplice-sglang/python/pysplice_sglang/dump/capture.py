"""Aux-layer capture without a draft model: the architecture's __init__ calls
set_eagle3_layers_to_capture between capture_begin and capture_end, which undo the call (and
turn the dump off) when the layers it selects do not exist in the model.

Its definitions are injected as they are written here (see __init__.py).
"""

import logging

from .settings import _pysplice_hs_show


def _pysplice_hs_backbones(model):
    # The modules under `model` (itself included) whose dump is on.
    modules = model.modules() if callable(getattr(model, "modules", None)) else [model]
    return [m for m in modules if getattr(m, "_hs_dump_dir", None) is not None and getattr(m, "_hs_dump_state", None) is not None]


def _pysplice_hs_capture_begin(model):
    # From the architecture's __init__, before set_eagle3_layers_to_capture: (the ids to
    # pass, a snapshot to undo the call with), or None to leave capture off: the dump
    # is off (a bad setting, a draft model), or pipeline parallel (earlier stages'
    # layers are never captured; the 0.5.17+ packer then raises).
    backbones = _pysplice_hs_backbones(model)
    if not backbones:
        return None
    if getattr(getattr(model, "pp_group", None), "world_size", 1) > 1:
        logging.getLogger(__name__).warning(
            "hidden state dump: aux capture not enabled under pipeline parallelism, dumping without aux_hidden_state"
        )
        return None
    return backbones[0]._hs_dump_state["layers"], _pysplice_hs_snapshot(model)


def _pysplice_hs_snapshot(model):
    # Every module's own attributes (lists copied: they may be changed in place), so
    # that a capture that cannot work is undone exactly.
    modules = list(model.modules()) if callable(getattr(model, "modules", None)) else [model]
    return [(m, dict((k, (v, list(v) if type(v) is list else None)) for k, v in vars(m).items())) for m in modules]


def _pysplice_hs_restore(saved):
    for module, attrs in saved:
        now = vars(module)
        for key in [k for k in now if k not in attrs]:
            del now[key]
        for key, (value, items) in attrs.items():
            now[key] = value
            if items is not None and (len(value) != len(items) or any(a is not b for a, b in zip(value, items))):
                value[:] = items


def _pysplice_hs_capture_end(model, begun, exc=None):
    # After set_eagle3_layers_to_capture (or its exception `exc`): the layers it
    # selected must exist in the model (explicit ids get +1 in some releases, the
    # default [2, N//2, N-3] does not fit a tiny model); otherwise the call is undone
    # and the dump turned off, with one warning: the model is then as SGLang builds it
    # without the dump, and forward's unpack of (hidden, aux) never sees a bare tensor.
    ids, saved = begun
    log = logging.getLogger(__name__)
    if exc is not None:
        _pysplice_hs_restore(saved)
        log.warning("hidden state dump: aux capture not enabled, dumping without aux_hidden_state: %r", exc)
        return
    for backbone in _pysplice_hs_backbones(model):
        layers = getattr(backbone, "layers_to_capture", None)
        layers = list(layers) if isinstance(layers, (list, tuple)) else None
        count = backbone._hs_dump_state["layer_count"] or len(getattr(backbone, "layers", None) or ()) or None
        why = None
        if not layers or not all(isinstance(i, int) for i in layers):
            why = "no layer selected (%r)" % (layers,)
        elif any(b <= a for a, b in zip(layers, layers[1:])) or (ids is not None and len(layers) != len(ids)):
            why = "layers %s, not one per id" % layers
        elif layers[0] < 1 or (count is not None and layers[-1] >= count):
            why = "layers %s, outside 1-%s of this model" % (layers, count - 1 if count else "?")
        if why is not None:
            _pysplice_hs_restore(saved)
            for m in _pysplice_hs_backbones(model):
                m._hs_dump_dir = None
            log.warning(
                "hidden state dump off: %s=%s gives %s; the model is left as without the dump",
                "{layers_env}",
                _pysplice_hs_show(",".join(str(i) for i in ids)) if ids is not None else "(unset, SGLang's default)",
                why,
            )
            return
