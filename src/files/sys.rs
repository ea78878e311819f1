//! The few operating-system calls that safe reads and writes need beyond std: opening without
//! blocking on a FIFO or following a final symbolic link, advisory locks, owners and modes set on
//! an open handle, and whether a process is alive. Elsewhere than Unix these degrade to what std
//! offers (no lock, no owner).

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

/// What a lock attempt found.
pub(crate) enum Lock {
    /// The handle holds the exclusive lock.
    Held,
    /// Another open file description holds a lock; try again later.
    Busy,
    /// The file system does not offer advisory locks on this handle (some network file
    /// systems): go on without one, the re-check before the rename still applies.
    Unsupported,
}

#[cfg(unix)]
mod imp {
    use super::{File, Io, Lock, Metadata, OpenOptions, Path};
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    use std::os::unix::io::AsRawFd;

    pub(crate) fn open_read(path: &Path, follow: bool) -> Io<File> {
        // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer; on a regular
        // file it changes nothing.
        let mut flags = libc::O_NONBLOCK;
        if !follow {
            flags |= libc::O_NOFOLLOW;
        }
        OpenOptions::new().read(true).custom_flags(flags).open(path)
    }

    pub(crate) fn identity(meta: &Metadata) -> (u64, u64) {
        (meta.dev(), meta.ino())
    }

    pub(crate) fn try_lock(file: &File) -> Io<Lock> {
        // SAFETY: flock on a file descriptor that `file` keeps open; no memory is shared.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(Lock::Held);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(code) if code == libc::EWOULDBLOCK || code == libc::EINTR => Ok(Lock::Busy),
            Some(code) if code == libc::ENOLCK || code == libc::EOPNOTSUPP || code == libc::EBADF => {
                Ok(Lock::Unsupported)
            }
            _ => Err(err),
        }
    }

    pub(crate) fn copy_owner(file: &File, meta: &Metadata) -> bool {
        std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid())).is_ok()
    }

    pub(crate) fn copy_mode(file: &File, meta: &Metadata, owner_kept: bool) -> Io<()> {
        let mut mode = meta.mode() & 0o7777;
        if !owner_kept {
            // A set-user/group-id bit must not survive on a file now owned by someone else.
            mode &= !0o6000;
        }
        file.set_permissions(std::fs::Permissions::from_mode(mode))
    }

    pub(crate) fn links(meta: &Metadata) -> u64 {
        meta.nlink()
    }

    /// Copies the extended attributes of `from` onto `to` (POSIX ACLs, the SELinux label, user
    /// attributes), as `sed -i` keeps ACLs and the security context. Each one the process may not
    /// set, or the file system does not hold, is left out.
    #[cfg(target_os = "linux")]
    pub(crate) fn copy_xattrs(from: &File, to: &File) {
        let (from, to) = (from.as_raw_fd(), to.as_raw_fd());
        // SAFETY: a null buffer of size 0 asks for the size of the list.
        let size = unsafe { libc::flistxattr(from, std::ptr::null_mut(), 0) };
        let Ok(size) = usize::try_from(size) else { return };
        if size == 0 {
            return;
        }
        let mut names = vec![0u8; size];
        // SAFETY: `names` has room for `size` bytes.
        let size = unsafe { libc::flistxattr(from, names.as_mut_ptr().cast(), names.len()) };
        let Ok(size) = usize::try_from(size) else { return };
        // The list is NUL-terminated names, one after the other.
        for name in names[..size.min(names.len())].split_inclusive(|b| *b == 0) {
            if name.last() != Some(&0) || name.len() < 2 {
                continue;
            }
            let name = name.as_ptr().cast();
            // SAFETY: `name` is NUL-terminated inside `names`; a null buffer asks for the size.
            let len = unsafe { libc::fgetxattr(from, name, std::ptr::null_mut(), 0) };
            let Ok(len) = usize::try_from(len) else { continue };
            let mut value = vec![0u8; len];
            // SAFETY: `value` has room for `len` bytes.
            let len = unsafe { libc::fgetxattr(from, name, value.as_mut_ptr().cast(), value.len()) };
            let Ok(len) = usize::try_from(len) else { continue };
            // SAFETY: `value[..len]` was filled by fgetxattr.
            let _ = unsafe { libc::fsetxattr(to, name, value.as_ptr().cast(), len.min(value.len()), 0) };
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn copy_xattrs(_from: &File, _to: &File) {}

    pub(crate) fn alive(pid: u32) -> bool {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return true;
        };
        if pid <= 0 {
            return true;
        }
        // SAFETY: signal 0 only checks that the process exists; nothing is sent.
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }

    pub(crate) fn kind(meta: &Metadata) -> Option<&'static str> {
        use std::os::unix::fs::FileTypeExt;
        let kind = meta.file_type();
        if kind.is_file() {
            None
        } else if kind.is_dir() {
            Some("a directory")
        } else if kind.is_fifo() {
            Some("a FIFO (named pipe)")
        } else if kind.is_char_device() {
            Some("a character device")
        } else if kind.is_block_device() {
            Some("a block device")
        } else if kind.is_socket() {
            Some("a socket")
        } else {
            Some("not a regular file")
        }
    }
}

#[cfg(not(unix))]
mod imp {
    use super::{File, Io, Lock, Metadata, OpenOptions, Path};

    pub(crate) fn open_read(path: &Path, _follow: bool) -> Io<File> {
        OpenOptions::new().read(true).open(path)
    }

    pub(crate) fn identity(_meta: &Metadata) -> (u64, u64) {
        (0, 0)
    }

    pub(crate) fn try_lock(_file: &File) -> Io<Lock> {
        Ok(Lock::Unsupported)
    }

    pub(crate) fn copy_owner(_file: &File, _meta: &Metadata) -> bool {
        true
    }

    pub(crate) fn copy_mode(file: &File, meta: &Metadata, _owner_kept: bool) -> Io<()> {
        file.set_permissions(meta.permissions())
    }

    pub(crate) fn links(_meta: &Metadata) -> u64 {
        1
    }

    pub(crate) fn copy_xattrs(_from: &File, _to: &File) {}

    pub(crate) fn alive(_pid: u32) -> bool {
        true
    }

    pub(crate) fn kind(meta: &Metadata) -> Option<&'static str> {
        if meta.is_file() {
            None
        } else if meta.is_dir() {
            Some("a directory")
        } else {
            Some("not a regular file")
        }
    }
}

type Io<T> = io::Result<T>;

pub(crate) use imp::*;
