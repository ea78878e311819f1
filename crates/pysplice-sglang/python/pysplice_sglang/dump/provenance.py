"""The provenance every sample carries: recipe, releases, architecture, layers, config digest,
parallel layout.

Its definitions are injected as they are written here (see __init__.py).
"""


try:
    import torch
except ImportError:  # the dump runs under PyTorch; the parts that need none are tested without it
    torch = None

from .parallel import _pysplice_hs_parallel


def _pysplice_hs_provenance(model, hidden, aux):
    # What a trainer needs to refuse a wrong mix of files, settled once per model at its
    # first prefill pass and stored in every sample under "provenance" (str, int, list of
    # int or None only: torch.load(weights_only=True) reads it). SpecForge's offline reader
    # loads input_ids, loss_mask, hidden_state and aux_hidden_state only.
    state = model._hs_dump_state
    config = state.get("config")
    archs = list(getattr(config, "architectures", None) or [])
    layers = getattr(model, "layers_to_capture", None)
    captured = aux is not None and (isinstance(aux, torch.Tensor) or len(aux) > 0)
    layers = [int(i) for i in layers] if captured and layers else None
    info = dict(
        recipe="sglang-hs-dump",
        recipe_version="{recipe_version}",
        pysplice_version="{pysplice_version}",
        sglang_version=_pysplice_hs_sglang_version(),
        architecture=str(archs[0]) if archs else None,
        model_class=type(model).__name__,
        dtype=str(hidden.dtype).replace("torch.", ""),
        hidden_size=int(hidden.shape[-1]),
        num_hidden_layers=state.get("layer_count"),
        # hidden_state is the last layer's output after the model's final norm
        hidden_state="post-norm",
        # SGLang's model.layers_to_capture: entry i is the residual stream entering layer
        # i (HF hidden_states[i]); SpecForge's eagle_aux_hidden_state_layer_ids name the
        # output of layer i - 1 (its default [1, N//2-1, N-4] is SGLang's [2, N//2, N-3])
        aux_layers=layers,
        eagle_aux_hidden_state_layer_ids=[i - 1 for i in layers] if layers else None,
        aux_layers_requested=state.get("layers"),
        config_sha256=_pysplice_hs_config_digest(config),
    )
    info.update(_pysplice_hs_parallel())
    group = getattr(model, "pp_group", None)  # the pipeline group this model runs in (0.5.1+)
    for key, attr in (("pp_rank", "rank_in_group"), ("pp_size", "world_size")):
        value = getattr(group, attr, None)
        if isinstance(value, int):
            info[key] = value
    return info


def _pysplice_hs_sglang_version():
    # The running SGLang's release: the imported package's __version__ (a source checkout
    # may differ from the installed metadata), else the distribution's; None if neither.
    import sys

    version = getattr(sys.modules.get("sglang"), "__version__", None)
    if not version:
        try:
            import importlib.metadata

            version = importlib.metadata.version("sglang")
        except Exception:
            version = None
    return str(version) if version else None


def _pysplice_hs_config_digest(config):
    # SHA-256 of the model's config, stable across processes and machines: its JSON
    # (config.to_dict(), or its attributes) with sorted keys, without the keys starting
    # with "_" at any level (HF's _name_or_path is the local path, _commit_hash ...), other
    # values written as str() without memory addresses. None when it cannot be read.
    import hashlib
    import json
    import re

    def plain(value):
        if callable(getattr(value, "to_dict", None)) and value is not config:
            return value.to_dict()
        return re.sub(" at 0x[0-9a-fA-F]+", "", str(value))

    def public(value):
        if isinstance(value, dict):
            return dict((k, public(v)) for k, v in value.items() if not str(k).startswith("_"))
        if isinstance(value, list):
            return [public(v) for v in value]
        return value

    if config is None:
        return None
    try:
        data = config.to_dict() if callable(getattr(config, "to_dict", None)) else dict(vars(config))
        data = public(json.loads(json.dumps(data, default=plain)))
        text = json.dumps(data, sort_keys=True)
    except Exception:
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
