"""The dump's writer threads, seen from a test: every writer a patched module builds is
recorded, so that a check can wait until the passes handed to the writers are on disk (the dump
writes off the forward, on threads of its own)."""

WRITERS = []


def track_writers(module):
    """Record every writer that `module`'s `_pysplice_hs_Writer` builds (a pristine module has none)."""
    cls = getattr(module, "_pysplice_hs_Writer", None)
    if cls is None:
        return
    init = cls.__init__

    def tracked(self, *args, **kwargs):
        init(self, *args, **kwargs)
        WRITERS.append(self)

    cls.__init__ = tracked


def drain():
    """Wait until every writer has cleared the folder of earlier debris (where it does), has
    written what it was given and holds no file open (or died), has its ring ready and its
    status file up to date; they keep running."""
    for w in WRITERS:
        cleaned = getattr(w, "cleaned", None)
        if cleaned is not None:
            cleaned.wait(60)
        with w.cond:
            while (w.jobs or getattr(w, "resizing", False)) and w.error is None or getattr(w, "busy", 0):
                w.cond.wait(1.0)
            # and the status file says so (the status thread writes it when the counts change)
            while getattr(w, "reported", 0) != getattr(w, "version", 0) and w.error is None and not w.closed:
                w.cond.wait(1.0)


def close_all():
    """Let every writer finish what it was given, then stop it and forget it."""
    for w in WRITERS:
        w.close()
    del WRITERS[:]
