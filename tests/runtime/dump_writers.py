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
    """Wait until every writer has written what it was given (or died); they keep running."""
    for w in WRITERS:
        with w.cond:
            while w.jobs and w.error is None:
                w.cond.wait(1.0)


def close_all():
    """Let every writer finish what it was given, then stop it and forget it."""
    for w in WRITERS:
        w.close()
    del WRITERS[:]
