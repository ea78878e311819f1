"""What the writers of one process share, below every module that uses it: the writers' tokens
and serials, the CRC table of stitched files, the pool of stitch threads.

Its definitions are injected as they are written here (see __init__.py).
"""


class _pysplice_hs_Process:
    # What the writers of this process share (class attributes: one process, one copy).
    tokens = set()  # this process's writers: never debris
    # Serials of this process's writers and stitched files: the names of status files and
    # of a chunked request's temporaries carry one, so that no two writers of a process
    # share a name, whatever their tokens (pid and serial: unique by construction).
    serials = __import__("itertools").count(1)  # next() on it is atomic
    crc_powers = []  # x^(2^k) modulo the CRC-32 polynomial, k = 0..31 (filled once)
    # The threads that store a chunked request's rows through its file's mapping, shared
    # by the writers of the process (_pysplice_hs_stitch_run): their queue, once started.
    stitch_threads = 8
    stitchers = []
    stitch_lock = __import__("threading").Lock()


def _pysplice_hs_serial():
    # The next serial of this process (1, 2, ...), for names no two writers share.
    return next(_pysplice_hs_Process.serials)
