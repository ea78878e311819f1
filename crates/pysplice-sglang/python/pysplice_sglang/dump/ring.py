"""The host ring buffer's memory: page-locking it, building it when the model is built (so that
the first pass finds it), and the sizes the messages about it print.

Its definitions are injected as they are written here (see __init__.py).
"""

try:
    import torch
except ImportError:  # the dump runs under PyTorch; the parts that need none are tested without it
    torch = None

from .parallel import _pysplice_hs_chunk_size, _pysplice_hs_ranks


def _pysplice_hs_pin(ring):
    # Page-lock `ring` for the side stream's copies (True when registered). The pages are
    # faulted in first: registering faulted pages is about 5x faster, and the driver lock
    # that the call holds keeps the forward's own CUDA calls waiting only that long. (One
    # registration: a copy into two adjacent registrations is refused by CUDA.)
    try:
        ring.fill_(0)
        return int(torch.cuda.cudart().cudaHostRegister(ring.data_ptr(), ring.numel(), 0)) == 0
    except Exception:
        return False


def _pysplice_hs_ring_early(state, config):
    # From _pysplice_hs_setup, as the model is built: start building the ring that the
    # first pass would have the writer build, so that the first pass finds it ready (a
    # server loads the weights and captures its graphs between the two) instead of
    # copying into pageable memory that it faults in (about 100 ms for an 8,192-token
    # pass of DeepSeek-V3's width). Its size is what that pass would give it: four passes
    # of the chunk size (8,192 tokens where unknown) at the config's width and the aux
    # layers asked for (3, SGLang's default, where none are), within the budget. Only on
    # CUDA, and only where this process writes (attention-TP rank 0); nothing otherwise.
    import threading

    try:
        width = getattr(config, "hidden_size", None)
        if torch is None or not isinstance(width, int) or width <= 0 or not torch.cuda.is_available():
            return
        if _pysplice_hs_ranks()[0] != 0:
            return
        dtype = getattr(config, "torch_dtype", None)
        itemsize = dtype.itemsize if isinstance(dtype, torch.dtype) else 2
        layers = len(state["layers"]) if state["layers"] is not None else 3
        rows = _pysplice_hs_chunk_size() or 8192
        need = rows * (width * itemsize * (1 + layers) + 8)
        size = min(state["budget"] - need, need * 4)
        if size < need:
            return
        early = dict(size=size, ring=None, registered=False, done=threading.Event())
        device = torch.cuda.current_device()
    except Exception:
        return

    def build():
        try:
            torch.cuda.set_device(device)
            ring = torch.empty(size, dtype=torch.uint8)
            registered = _pysplice_hs_pin(ring)
            if not registered:
                ring = torch.empty(size, dtype=torch.uint8, pin_memory=True)
            early.update(ring=ring, registered=registered)
        except Exception:
            pass  # no ring: the first pass has one built, as without this
        finally:
            early["done"].set()

    state["early"] = early
    threading.Thread(target=build, name="pysplice-hs-dump-ring", daemon=True).start()


def _pysplice_hs_size(n):
    # Bytes for a message: "512 B", "20.0 KiB", "470.0 MiB".
    if n < 1024:
        return "%d B" % n
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024.0
        if n < 1024 or unit == "GiB":
            return "%.1f %s" % (n, unit)
