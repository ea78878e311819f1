"""The small hooks of the recipes, each the body of the function of its name.

The body is the hook's code (dedented); a parameter after `self` is the method's parameter of
that position in the patched file (`config` here is `{param.1}` there). They run in the method
they are injected into (DeepseekV2Model.__init__, DeepseekV2ForCausalLM.__init__, or the
targets that sglang_hs_dump_models.toml selects).
"""

import os

from .capture import _pysplice_hs_capture_begin, _pysplice_hs_capture_end
from .settings import _pysplice_hs_is_draft, _pysplice_hs_setup


def init(self, config):
    # Hidden-state dump: None keeps it off (one attribute test per forward). Draft
    # models built on this class (MistralLarge3EagleModel) never dump; the cap
    # ${max_env} is read here, once.
    self._hs_dump_dir = os.environ.get("{env}") or None
    if self._hs_dump_dir is not None:
        self._hs_dump_dir = _pysplice_hs_setup(self, config)
    self._hs_dump_count = 0


def capture(self, config):
    # Hidden-state dump: capture the EAGLE-3 aux layers without a draft model. Go
    # through set_eagle3_layers_to_capture: it fills model.layers_to_capture, and
    # setting capture_aux_hidden_states alone breaks forward's tuple unpack when no
    # layer is captured. Skipped for draft models and under pipeline parallelism;
    # undone (dump off) when the layers it selects do not exist in the model.
    if os.environ.get("{env}") and not _pysplice_hs_is_draft(self, config):
        # None: the dump is off (a bad setting) or pipeline parallel; capture stays off.
        _hs_dump_begun = _pysplice_hs_capture_begin(self)
        if _hs_dump_begun is not None:
            try:
                self.set_eagle3_layers_to_capture(_hs_dump_begun[0])
            except Exception as _hs_dump_exc:
                _pysplice_hs_capture_end(self, _hs_dump_begun, _hs_dump_exc)
            else:
                _pysplice_hs_capture_end(self, _hs_dump_begun)
