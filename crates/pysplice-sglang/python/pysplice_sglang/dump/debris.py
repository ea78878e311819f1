"""The debris rules: which hidden temporaries and status files of earlier, killed processes the
next start removes (the exact names this dump makes, of processes proven gone).

Its definitions are injected as they are written here (see __init__.py).
"""

import logging
import os

from .status import _pysplice_hs_read_status, _pysplice_hs_started
from .state import _pysplice_hs_Process


def _pysplice_hs_clean(fd_dir, me):
    # Remove what earlier processes of this dump left in the folder when they were
    # killed: hidden temporaries (a sample cut mid-write, or one already linked to its
    # final name, whose second link this is) and their status files. Only entries with
    # the exact names this dump makes, regular files of this user, of a process whose
    # status file (same host, pid namespace and boot) names a process that is gone.
    import re
    import stat

    token_re = "([0-9a-f]" + "[0-9a-f]" * 7 + ")"  # no braces here: they are template slots
    # Temporaries: a sample's (<stem>_<n>.ckpt[.partial].tmp), a chunked request's file
    # (<stem>_s<serial>.stitch.tmp) or part files (<stem>_s<serial>.<key>.part.tmp; before
    # serials, <stem>_<n>.<key>.part.tmp). Status files: <stem>_<serial>.json (before
    # serials, without one) and their .tmp.
    pattern = re.compile(
        r"\.(?:data_dp\d+_pid(\d+)_" + token_re + r"_(?:\d\d\d\d\d\d\d\d+(?:\.ckpt(?:\.partial)?|\.(?:ids|hidden|aux)\.part)"
        r"|s\d+\.(?:stitch|(?:ids|hidden|aux)\.part))\.tmp"
        r"|hs_dump_status_dp\d+_pid(\d+)_" + token_re + r"(?:_\d+)?\.json(\.tmp)?)"
    )
    groups = dict()  # (pid, token): [status file names, other names]
    for entry in os.scandir(fd_dir):
        m = pattern.fullmatch(entry.name)
        if m is None:
            continue
        key = (int(m.group(1)), m.group(2)) if m.group(1) else (int(m.group(3)), m.group(4))
        group = groups.setdefault(key, [[], []])
        if m.group(3) and not m.group(5):
            group[0].append(entry.name)
        else:
            group[1].append(entry.name)
    lost = []
    for (pid, token), (statuses, debris) in groups.items():
        if not statuses or token in _pysplice_hs_Process.tokens:
            continue
        # every status file of the group (writers of one process) must prove it gone
        infos = [_pysplice_hs_read_status(fd_dir, status, me["uid"]) for status in statuses]
        if any(info is None or info.get("pid") != pid or info.get("token") != token for info in infos):
            continue
        same = all(info.get(k) == me[k] and me[k] for info in infos for k in ("host", "pidns", "boot"))
        if not same or not all(info.get("start") for info in infos) or any(_pysplice_hs_started(pid) == info["start"] for info in infos):
            continue  # another machine or namespace, or still running: not ours to judge
        for name in debris + statuses:
            try:
                st = os.stat(name, dir_fd=fd_dir, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_uid == me["uid"]:
                    os.unlink(name, dir_fd=fd_dir)
            except FileNotFoundError:
                pass
        left = sum(max(int(i.get("queued", 0)) - int(i.get("written", 0)) - int(i.get("dropped", 0)), 0) for i in infos)
        held = sum(int(i.get("held", 0)) for i in infos)
        if left > 0 or held > 0:
            lost.append("pid %d: %d passes, %d chunked requests unfinished" % (pid, max(left, 0), held))
    if lost:
        logging.getLogger(__name__).warning(
            "hidden state dump: earlier processes were stopped with passes not written (lost: %s); "
            "wait until the folder is idle before stopping the server",
            ", ".join(lost[:8]) + (", ..." if len(lost) > 8 else ""),
        )
