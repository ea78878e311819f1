//! A folder opened once, and every file of a read or a write named relative to it (`openat`,
//! `fstatat`, `renameat`, `unlinkat`): a folder of the path moved away or replaced by a link
//! between the steps cannot redirect them, since no step resolves the path again. A folder of a
//! walk is opened in its parent's handle ([`Folder::open_child`]) and knows where it was opened,
//! to check that it is still there ([`Folder::in_place`]). Elsewhere than
//! Unix the same calls go through the path (what std offers).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// What `fstatat` says of a name in a folder, without following a link.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    /// Device and inode.
    pub(crate) identity: (u64, u64),
    /// What it is when it is not a regular file (`a directory`, `a symbolic link`, ...).
    pub(crate) kind: Option<&'static str>,
    /// A folder (not a link to one).
    pub(crate) dir: bool,
    /// A symbolic link.
    pub(crate) link: bool,
    /// Its size in bytes.
    pub(crate) len: u64,
    /// Whether this process's effective user owns it.
    pub(crate) mine: bool,
    /// Its modification time.
    pub(crate) modified: Option<SystemTime>,
}

/// An open folder.
#[derive(Debug)]
pub(crate) struct Folder {
    /// The folder's path, for messages and for what is not done relative to the handle.
    path: PathBuf,
    #[cfg_attr(not(unix), allow(dead_code))]
    handle: File,
    /// For a folder opened inside another (a folder of a walk): that folder and the name it had
    /// there, to check that it is still in its place.
    parent: Option<(Arc<Folder>, OsString)>,
}

impl Folder {
    /// Opens the folder at `path`, refusing a final symbolic link (the path given is resolved
    /// already: a link there now was put there since).
    pub(crate) fn open(path: &Path) -> io::Result<Folder> {
        Ok(Folder {
            path: path.to_path_buf(),
            handle: imp::open_dir(path)?,
            parent: None,
        })
    }

    /// Opens the folder `name` of `parent`, relative to its handle and never through a link
    /// (`O_NOFOLLOW|O_DIRECTORY`): a link or a file swapped in for it fails (`ELOOP`,
    /// `ENOTDIR`).
    pub(crate) fn open_child(parent: &Arc<Folder>, name: &OsStr) -> io::Result<Folder> {
        Ok(Folder {
            path: parent.path.join(name),
            handle: imp::open_dir_at(parent, name)?,
            parent: Some((Arc::clone(parent), name.to_os_string())),
        })
    }

    /// Whether the folder is still where it was opened: each folder of its chain still under
    /// its name in the one above (the same device and inode), and the top one still at its path.
    pub(crate) fn in_place(&self) -> io::Result<bool> {
        let id = self.identity()?;
        match &self.parent {
            Some((parent, name)) => {
                let here = parent.entry(name).is_ok_and(|e| e.identity == id);
                Ok(here && parent.in_place()?)
            }
            None => Ok(imp::open_dir(&self.path)
                .and_then(|h| imp::handle_identity(&h))
                .is_ok_and(|now| now == id)),
        }
    }

    /// The folder's path as opened.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Device and inode of the folder opened.
    pub(crate) fn identity(&self) -> io::Result<(u64, u64)> {
        imp::handle_identity(&self.handle)
    }

    /// `name` in this folder, not following a link.
    pub(crate) fn entry(&self, name: &OsStr) -> io::Result<Entry> {
        imp::stat_at(self, name)
    }

    /// Opens `name` for reading without following a link, without blocking on a FIFO.
    pub(crate) fn open_read(&self, name: &OsStr) -> io::Result<File> {
        imp::open_at(self, name, imp::Mode::Read)
    }

    /// Opens `name` to lock it: read-write where the process may (NFS grants an exclusive lock
    /// only on a handle open for writing), read-only otherwise; never through a link.
    pub(crate) fn open_to_lock(&self, name: &OsStr) -> io::Result<File> {
        imp::open_at(self, name, imp::Mode::ReadWrite).or_else(|_| self.open_read(name))
    }

    /// Creates `name` exclusively (a planted file or link of that name makes it fail), mode 0600.
    pub(crate) fn create_new(&self, name: &OsStr) -> io::Result<File> {
        imp::open_at(self, name, imp::Mode::CreateNew)
    }

    /// Renames `from` over `to`, both in this folder.
    pub(crate) fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        imp::rename_at(self, from, to)
    }

    /// Removes the name `name` (never what a link points to).
    pub(crate) fn remove(&self, name: &OsStr) -> io::Result<()> {
        imp::unlink_at(self, name)
    }

    /// The names in the folder (`.` and `..` left out).
    pub(crate) fn names(&self) -> io::Result<Vec<OsString>> {
        imp::names(self)
    }

    /// Flushes the folder's entries to disk (after renames).
    pub(crate) fn sync(&self) -> io::Result<()> {
        imp::sync(self)
    }
}

#[cfg(unix)]
mod imp {
    use std::ffi::{CString, OsStr, OsString};
    use std::fs::{File, OpenOptions};
    use std::io;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::os::unix::io::{AsRawFd, FromRawFd};
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    use super::{Entry, Folder};

    pub(super) enum Mode {
        Read,
        ReadWrite,
        CreateNew,
    }

    pub(super) fn open_dir(path: &Path) -> io::Result<File> {
        let opened = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(path);
        match opened {
            // A folder one may pass through but not list (mode 0711): a handle that names it
            // serves every *at call all the same; only listing (the stale-temp cleaner) and
            // fsync need more, and do without.
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Err(err) if err.kind() == io::ErrorKind::PermissionDenied => {
                let c = CString::new(path.as_os_str().as_bytes())
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
                let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
                // SAFETY: a NUL-terminated path.
                let fd = unsafe { libc::open(c.as_ptr(), flags) };
                if fd < 0 {
                    return Err(err);
                }
                // SAFETY: `fd` was just opened and is owned by nothing else.
                Ok(unsafe { File::from_raw_fd(fd) })
            }
            other => other,
        }
    }

    pub(super) fn handle_identity(file: &File) -> io::Result<(u64, u64)> {
        let meta = file.metadata()?;
        Ok((meta.dev(), meta.ino()))
    }

    /// A single name of the folder: never empty, never with a `/` (which would leave it).
    fn c_name(name: &OsStr) -> io::Result<CString> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.contains(&b'/') || bytes == b"." || bytes == b".." {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a name in the folder"));
        }
        CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name with a NUL byte"))
    }

    fn check(rc: libc::c_int) -> io::Result<()> {
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    pub(super) fn stat_at(folder: &Folder, name: &OsStr) -> io::Result<Entry> {
        let c = c_name(name)?;
        // SAFETY: an all-zero `stat` is a valid value for fstatat to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a folder descriptor `folder` keeps open, a NUL-terminated name, a `stat` to fill.
        check(unsafe {
            libc::fstatat(
                folder.handle.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        })?;
        let kind = match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => None,
            libc::S_IFDIR => Some("a directory"),
            libc::S_IFIFO => Some("a FIFO (named pipe)"),
            libc::S_IFCHR => Some("a character device"),
            libc::S_IFBLK => Some("a block device"),
            libc::S_IFSOCK => Some("a socket"),
            libc::S_IFLNK => Some("a symbolic link"),
            _ => Some("not a regular file"),
        };
        let modified = u64::try_from(st.st_mtime).ok().map(|secs| {
            let nanos = u32::try_from(st.st_mtime_nsec).unwrap_or(0);
            SystemTime::UNIX_EPOCH + Duration::new(secs, nanos.min(999_999_999))
        });
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        #[allow(clippy::useless_conversion)] // dev_t and ino_t are not u64 everywhere
        Ok(Entry {
            identity: (u64::from(st.st_dev), u64::from(st.st_ino)),
            kind,
            dir: st.st_mode & libc::S_IFMT == libc::S_IFDIR,
            link: st.st_mode & libc::S_IFMT == libc::S_IFLNK,
            len: u64::try_from(st.st_size).unwrap_or(0),
            mine: st.st_uid == me,
            modified,
        })
    }

    pub(super) fn open_dir_at(folder: &Folder, name: &OsStr) -> io::Result<File> {
        let c = c_name(name)?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a folder descriptor `folder` keeps open, a NUL-terminated name.
        let fd = unsafe { libc::openat(folder.handle.as_raw_fd(), c.as_ptr(), flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    pub(super) fn open_at(folder: &Folder, name: &OsStr, mode: Mode) -> io::Result<File> {
        let c = c_name(name)?;
        // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer; on a regular
        // file it changes nothing. O_NOFOLLOW: a link is refused, never followed.
        let base = libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let flags = match mode {
            Mode::Read => base | libc::O_RDONLY,
            Mode::ReadWrite => base | libc::O_RDWR,
            Mode::CreateNew => base | libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
        };
        // SAFETY: a folder descriptor `folder` keeps open, a NUL-terminated name; the mode
        // argument is read only with O_CREAT.
        let fd = unsafe { libc::openat(folder.handle.as_raw_fd(), c.as_ptr(), flags, 0o600 as libc::c_uint) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        if matches!(mode, Mode::CreateNew) {
            // Blocking writes from here on (O_NONBLOCK is meaningless for a regular file, but
            // the handle should not carry it).
            // SAFETY: fcntl on a descriptor `file` owns.
            unsafe { libc::fcntl(fd, libc::F_SETFL, 0) };
        }
        Ok(file)
    }

    pub(super) fn rename_at(folder: &Folder, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (from, to) = (c_name(from)?, c_name(to)?);
        let fd = folder.handle.as_raw_fd();
        // SAFETY: one folder descriptor kept open, two NUL-terminated names.
        check(unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) })
    }

    pub(super) fn unlink_at(folder: &Folder, name: &OsStr) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: a folder descriptor kept open, a NUL-terminated name.
        check(unsafe { libc::unlinkat(folder.handle.as_raw_fd(), c.as_ptr(), 0) })
    }

    pub(super) fn names(folder: &Folder) -> io::Result<Vec<OsString>> {
        // A second descriptor of the same folder (not of its path), for the directory stream
        // to own.
        // SAFETY: a folder descriptor kept open, a NUL-terminated name.
        let fd = unsafe {
            libc::openat(
                folder.handle.as_raw_fd(),
                c".".as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is an open folder descriptor; on success the stream owns it.
        let dir = unsafe { libc::fdopendir(fd) };
        if dir.is_null() {
            let err = io::Error::last_os_error();
            // SAFETY: `fd` is still ours when fdopendir failed.
            unsafe { libc::close(fd) };
            return Err(err);
        }
        let mut out = Vec::new();
        loop {
            // SAFETY: `dir` is an open stream; the entry stays valid until the next readdir.
            let entry = unsafe { libc::readdir(dir) };
            if entry.is_null() {
                break;
            }
            // SAFETY: `d_name` is a NUL-terminated name inside the entry.
            let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
            let bytes = name.to_bytes();
            if bytes != b"." && bytes != b".." {
                out.push(OsString::from_vec(bytes.to_vec()));
            }
        }
        // SAFETY: `dir` is open and closed once, here.
        unsafe { libc::closedir(dir) };
        Ok(out)
    }

    pub(super) fn sync(folder: &Folder) -> io::Result<()> {
        folder.handle.sync_all()
    }
}

#[cfg(not(unix))]
mod imp {
    use std::ffi::{OsStr, OsString};
    use std::fs::{File, OpenOptions};
    use std::io;
    use std::path::Path;

    use super::{Entry, Folder};

    pub(super) enum Mode {
        Read,
        ReadWrite,
        CreateNew,
    }

    pub(super) fn open_dir(path: &Path) -> io::Result<File> {
        if !std::fs::symlink_metadata(path)?.is_dir() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a directory"));
        }
        File::open(path)
    }

    pub(super) fn handle_identity(_file: &File) -> io::Result<(u64, u64)> {
        Ok((0, 0))
    }

    pub(super) fn open_dir_at(folder: &Folder, name: &OsStr) -> io::Result<File> {
        open_dir(&folder.path.join(name))
    }

    pub(super) fn stat_at(folder: &Folder, name: &OsStr) -> io::Result<Entry> {
        let meta = std::fs::symlink_metadata(folder.path.join(name))?;
        let kind = if meta.is_file() {
            None
        } else if meta.is_dir() {
            Some("a directory")
        } else if meta.file_type().is_symlink() {
            Some("a symbolic link")
        } else {
            Some("not a regular file")
        };
        Ok(Entry {
            identity: (0, 0),
            kind,
            dir: meta.is_dir(),
            link: meta.file_type().is_symlink(),
            len: meta.len(),
            mine: true,
            modified: meta.modified().ok(),
        })
    }

    pub(super) fn open_at(folder: &Folder, name: &OsStr, mode: Mode) -> io::Result<File> {
        let path = folder.path.join(name);
        match mode {
            Mode::Read => OpenOptions::new().read(true).open(path),
            Mode::ReadWrite => OpenOptions::new().read(true).write(true).open(path),
            Mode::CreateNew => OpenOptions::new().write(true).create_new(true).open(path),
        }
    }

    pub(super) fn rename_at(folder: &Folder, from: &OsStr, to: &OsStr) -> io::Result<()> {
        std::fs::rename(folder.path.join(from), folder.path.join(to))
    }

    pub(super) fn unlink_at(folder: &Folder, name: &OsStr) -> io::Result<()> {
        std::fs::remove_file(folder.path.join(name))
    }

    pub(super) fn names(folder: &Folder) -> io::Result<Vec<OsString>> {
        Ok(std::fs::read_dir(&folder.path)?
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect())
    }

    pub(super) fn sync(_folder: &Folder) -> io::Result<()> {
        Ok(())
    }
}
