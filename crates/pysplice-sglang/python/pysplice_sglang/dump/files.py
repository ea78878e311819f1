"""The dump folder and its sample files: the names, the folder checks, and the write of one sample
(an exclusive hidden temporary linked to a free name, never over an existing file).

Its definitions are injected as they are written here (see __init__.py).
"""

import errno
import os

try:
    import torch
except ImportError:  # the dump runs under PyTorch; the parts that need none are tested without it
    torch = None


def _pysplice_hs_stem(state):
    # The start of every name of this model's files: data_dp<rank>_pid<pid>_<token>.
    return "data_dp%d_pid%d_%s" % (state["dp_rank"], os.getpid(), state["token"])


def _pysplice_hs_open_dir(path):
    # The folder is created 0700 (prompts are private data). An existing one must be
    # a real directory (not a symlink), owned by this user and not writable by group
    # or others; it is opened once and every file is made relative to that handle.
    # O_NOFOLLOW does not apply to a path that ends with "/" (or "/.", "//"), so the
    # last component is opened on its own, relative to its parent, never followed.
    import stat

    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or parts[-1] == "..":
        raise OSError("%s: refused, the path does not end with a folder name" % path)
    parent = "/".join(parts[:-1])
    parent = "/" + parent if path.startswith("/") else parent or "."
    os.makedirs(parent, exist_ok=True)
    parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            os.mkdir(parts[-1], 0o700, dir_fd=parent_fd)
        except FileExistsError:
            pass
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)
        except OSError as exc:
            raise OSError("%s: not a directory or a symlink (%s)" % (path, exc.strerror)) from None
    finally:
        os.close(parent_fd)
    st = os.fstat(fd)
    why = None
    if not stat.S_ISDIR(st.st_mode):
        why = "not a directory"
    elif st.st_uid != os.geteuid():
        why = "owned by uid %d, not this user (uid %d)" % (st.st_uid, os.geteuid())
    elif st.st_mode & 0o022:
        why = "writable by group or others (mode %o)" % (st.st_mode & 0o777)
    if why is not None:
        os.close(fd)
        raise OSError("%s: refused, %s" % (path, why))
    return fd


def _pysplice_hs_write(state, sample, suffix, number=None):
    # Write one sample under a new name, never over an existing file: an exclusive
    # 0600 temporary (no symlink followed) in the dump folder, synced, then linked
    # to its final name (link fails where the name exists, unlike rename) and
    # unlinked. Each name is taken from the counter before it is tried, so a failed
    # attempt never stalls the counter on one name; taken names are skipped.
    fd_dir = state["dir_fd"]
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(1000):
        if number is not None:
            n, number = number, None
        else:
            with state["lock"]:
                n = state["next"]
                state["next"] = n + 1
        name = "data_dp%d_pid%d_%s_%08d%s" % (state["dp_rank"], os.getpid(), state["token"], n, suffix)
        tmp = "." + name + ".tmp"
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=fd_dir)
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "wb") as f:
                torch.save(sample, f)
                f.flush()
                os.fsync(f.fileno())
            # One at a time: after a failed publication (the dump turns off) nothing
            # else is published, not even by a writer that was already at this point.
            with state["publish"]:
                if state.get("failed"):
                    raise RuntimeError("the dump turned off while this sample was written")
                try:
                    published = _pysplice_hs_publish(state, tmp, name)
                except BaseException as exc:
                    state["failed"] = exc
                    raise
            if published:
                if state.get("sink") is not None:  # the store sink takes it from here
                    state["sink"].offer(name)
                return name
        finally:
            try:
                os.unlink(tmp, dir_fd=fd_dir)
            except OSError:
                pass
    raise FileExistsError("no free file name after 1000 tries")


def _pysplice_hs_publish(state, tmp, name):
    # Give the temporary its final name unless that name exists; False if it does.
    fd_dir = state["dir_fd"]
    if state["link"]:
        try:
            os.link(tmp, name, src_dir_fd=fd_dir, dst_dir_fd=fd_dir, follow_symlinks=False)
            return True
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                raise
            state["link"] = False  # no hard links here (some FUSE / network folders)
    try:  # rename would replace: check first (the name carries a random token)
        os.stat(name, dir_fd=fd_dir, follow_symlinks=False)
        return False
    except FileNotFoundError:
        pass
    os.rename(tmp, name, src_dir_fd=fd_dir, dst_dir_fd=fd_dir)
    return True
