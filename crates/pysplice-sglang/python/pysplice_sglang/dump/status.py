"""Status files: the identity of the process that writes one (host, pid namespace, boot, pid,
start time) and the bounded read of one.

Its definitions are injected as they are written here (see __init__.py).
"""

import os


def _pysplice_hs_identity():
    # What tells a later start whether the process that wrote a status file is gone:
    # host, pid namespace, boot, pid and the process's start time (empty where /proc
    # does not say; then nothing of it is ever taken for debris).
    import socket

    def read(path, link=False):
        try:
            if link:
                return os.readlink(path)
            with open(path) as f:
                return f.read(4096).strip()
        except (OSError, ValueError):
            return ""

    return dict(
        host=socket.gethostname(),
        pidns=read("/proc/self/ns/pid", link=True),
        boot=read("/proc/sys/kernel/random/boot_id"),
        pid=os.getpid(),
        start=_pysplice_hs_started(os.getpid()),
        uid=os.geteuid(),
    )


def _pysplice_hs_started(pid):
    # The start time of process `pid` (clock ticks since boot, /proc/PID/stat field
    # 22), or "" when there is no such process or no /proc.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read(4096).rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError, ValueError):
        return ""


def _pysplice_hs_read_status(fd_dir, name, uid):
    # A status file's content, when it is a small regular file of this user; else None.
    import json
    import stat

    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=fd_dir)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid or st.st_size > 65536:
            return None
        info = json.loads(os.read(fd, 65536).decode())
        return info if isinstance(info, dict) else None
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
