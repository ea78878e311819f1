"""The dump's settings, read once when the model is built: the folder, the file cap, the queue
budget and the aux layer ids (parsed and checked; a bad one keeps the dump off), and the draft
models that never dump.

Its definitions are injected as they are written here (see __init__.py).
"""

import logging
import os

from .ring import _pysplice_hs_ring_early
from .sink import _pysplice_hs_sink_setting


def _pysplice_hs_is_draft(module, config):
    # Speculative draft models reuse these classes (MistralLarge3ForCausalLMEagle,
    # MistralLarge3EagleModel) or get their architectures renamed by ModelConfig
    # (DeepseekV3ForCausalLMNextN, ...). They must neither capture nor dump.
    names = [type(module).__name__] + list(getattr(config, "architectures", None) or [])
    return any(tag in str(name).lower() for name in names for tag in ("eagle", "nextn", "mtp"))


def _pysplice_hs_setup(model, config):
    # From DeepseekV2Model.__init__ when ${env} is set: the folder to dump to, or
    # None to keep the dump off (draft models; a bad setting, with one warning).
    if _pysplice_hs_is_draft(model, config):
        return None
    count = getattr(config, "num_hidden_layers", None)
    count = count if isinstance(count, int) and count > 0 else None
    settings = dict()
    for key, name, default in (
        ("cap", "{max_env}", None),
        ("budget", "{queue_env}", 2048),
        ("layers", "{layers_env}", None),
        ("sink", "{sink_env}", None),
    ):
        raw = os.environ.get(name, "").strip()
        try:
            if key == "layers":
                value = _pysplice_hs_layer_ids(raw, count)
            elif key == "sink":
                value = _pysplice_hs_sink_setting(raw)
            else:
                value = float(raw) if key == "budget" and raw else int(raw) if raw else default
                if value is not None and not value >= 0:
                    raise ValueError("negative")
                if key == "budget":
                    value = max(int(value * (1 << 20)), 1)
        except (ValueError, OverflowError) as exc:
            # once per model: an __init__ that calls its base's (patched too) asks again
            if not getattr(model, "_hs_dump_refused", False):
                model._hs_dump_refused = True
                logging.getLogger(__name__).warning(
                    "hidden state dump off: %s=%s %s",
                    name,
                    _pysplice_hs_show(raw),
                    "is not a number of files" if key == "cap" else "is not a number of MiB" if key == "budget" else "is refused: %s" % exc,
                )
            return None
        settings[key] = value
    # token: names stay unique across model instances in one process and across
    # restarts that reuse a pid on a persistent folder.
    model._hs_dump_state = dict(
        cap=settings["cap"],
        budget=settings["budget"],
        budget_raw=os.environ.get("{queue_env}", "").strip() or "2048",
        layers=settings["layers"],
        layer_count=count,
        sink_setting=settings["sink"],
        sink=None,
        # the config (for the provenance's digest) and the provenance, once per model
        config=config,
        provenance=None,
        writer=None,
        dp_rank=0,
        chunk=0,
        dir_fd=None,
        queue=None,
        token=os.urandom(4).hex(),
        next=0,
        lock=None,
        link=True,
    )
    _pysplice_hs_ring_early(model._hs_dump_state, config)
    return os.environ.get("{env}")


def _pysplice_hs_show(raw):
    # An environment value for a log line: quoted, and cut when long.
    return repr(raw) if len(raw) <= 60 else repr(raw[:60]) + "..."


def _pysplice_hs_layer_ids(raw, count):
    # ${layers_env}: comma-separated layer ids, each a whole number (ASCII digits,
    # spaces around allowed) below the model's layer count, strictly increasing (so
    # no duplicates: SGLang would capture one and label two). Empty: None (SGLang's
    # default). An empty item (",," or a trailing comma) is an error, not skipped.
    if not raw:
        return None
    ids = []
    for item in raw.split(","):
        item = item.strip()
        if not (item.isascii() and item.isdigit() and len(item) <= 9):
            raise ValueError("%s is not a layer id (a whole number >= 0)" % _pysplice_hs_show(item))
        ids.append(int(item))
    if any(b <= a for a, b in zip(ids, ids[1:])):
        raise ValueError("the ids must be strictly increasing, without duplicates")
    if count is not None and ids[-1] >= count:
        raise ValueError("layer %d does not exist, the model has %d layers (0-%d)" % (ids[-1], count, count - 1))
    return ids
