//! Reading and writing files safely.
//!
//! Reading ([`read_bytes`], [`read_text`], [`DiskFile::read`]) accepts regular files only, up to
//! [`MAX_FILE_BYTES`], checked on the open handle before a byte is read: a FIFO, a device, a
//! directory or a socket is refused with [`ErrorKind::NotRegular`] and never blocks or is drained.
//!
//! Writing ([`DiskFile::write`], [`write_all`]) is atomic, all or nothing across files, and never
//! writes over a change made since the file was read:
//! - reading records the device and inode of the file and of its folder (opened first, the file
//!   then opened in it); writing opens each folder once, refuses one that is no longer the folder
//!   read from ([`ErrorKind::FolderReplaced`]: moved, or a link put in its place), and does every
//!   later step relative to that open folder (`openat`, `renameat`, `unlinkat`), so nothing is
//!   ever written through a folder swapped in meanwhile;
//! - a file of a folder walk is read where the walk met it (`DiskFile::read_in`, crate-only):
//!   relative to its folder's handle (each folder of the walk opened in its parent with
//!   `O_NOFOLLOW|O_DIRECTORY`), never through a link, only when it has the device and inode the
//!   walk saw ([`ErrorKind::FileReplaced`] otherwise) and its folder is still in its place; writing
//!   it keeps to that same handle, checked again to be in its place;
//! - the new text goes into a temp file created exclusively (`O_CREAT|O_EXCL`, so a planted file
//!   or link of that name is never followed) under an unpredictable name of bounded length in the
//!   target's folder, with the target's owner, group, mode and extended attributes set on the
//!   open handle before any byte is written (owner and group where the process may change them;
//!   set-id bits are dropped when it may not), then fsynced, renamed over the target, and the
//!   folder fsynced;
//! - the target is locked (`flock`, advisory: other pysplice processes wait); it must be the
//!   file read (same device and inode) and hold the bytes read, checked again right before the
//!   rename; otherwise [`ErrorKind::Changed`] and nothing is written;
//! - a text over [`MAX_FILE_BYTES`] is refused before anything is written
//!   ([`ErrorKind::OutputTooLarge`]): pysplice would refuse to read the file afterwards;
//! - a symbolic link is written through: the file it points to (resolved when it is read) is
//!   replaced, the link stays;
//! - a file with several hard links gets a new inode, as with `sed -i`: the other names keep the
//!   old content ([`DiskFile::hard_links`] tells the caller); two of its names written together
//!   each get their text (each a file of its own), under the one lock of the first;
//! - temp files that a dead pysplice process left behind (`.pysplice-<pid>-<random>.tmp`, same
//!   user, older than 15 minutes) are removed when writing into their folder; a copy of old bytes
//!   that a failed rollback could not put back is kept as `.pysplice-kept-<pid>-<random>.orig`,
//!   which the cleaner never takes.

mod folder;
mod read;
mod sys;
mod write;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, ErrorKind};
use crate::location::Location;
use crate::source::SourceFile;
pub(crate) use folder::Folder;

pub(crate) use read::MAX_FILE_BYTES;
pub use read::{read_bytes, read_text};
pub use write::write_all;

/// A file read from disk, with the bytes it had, to detect changes before writing.
#[derive(Clone, Debug)]
pub struct DiskFile {
    path: PathBuf,
    /// The file itself: `path` with every symbolic link resolved when it was read.
    real: PathBuf,
    bytes: Vec<u8>,
    source: SourceFile,
    links: u64,
    /// Device and inode when read: two names of one file (hard links) are one file, and the
    /// file written must be this one.
    identity: (u64, u64),
    /// Device and inode of the folder the file was read from: the only folder written into.
    folder_identity: (u64, u64),
    /// Whether the file had no write permission bit when read: it is never written (an atomic
    /// rename would replace it all the same).
    read_only: bool,
    /// The open folder it was read through, for a file of a folder walk: writing stays on
    /// this handle instead of opening the folder by its path again.
    held: Option<Arc<Folder>>,
}

/// Where a folder walk met a file: the open folder it is in, its name there, and the device
/// and inode the walk saw (not following a link), which the file read must still have.
#[derive(Clone, Debug)]
pub(crate) struct Spot {
    /// The folder, opened through its parents' handles.
    pub(crate) folder: Arc<Folder>,
    /// The file's name in it.
    pub(crate) name: OsString,
    /// Device and inode when walked.
    pub(crate) identity: (u64, u64),
}

/// `path` as text for messages, unambiguous: a byte that is not UTF-8 is written `\xNN` (where
/// [`Path::display`] would show U+FFFD for any of them, a name that does not exist).
#[must_use]
pub fn path_name(path: &Path) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_os_str().as_bytes();
        let mut out = String::with_capacity(bytes.len());
        for chunk in bytes.utf8_chunks() {
            out.push_str(chunk.valid());
            for byte in chunk.invalid() {
                out.push_str(&format!("\\x{byte:02x}"));
            }
        }
        out
    }
    #[cfg(not(unix))]
    {
        path.display().to_string()
    }
}

impl DiskFile {
    /// Reads `path` (the path's text is the file name in messages), following symbolic links.
    ///
    /// # Errors
    /// [`ErrorKind::NotRegular`], [`ErrorKind::TooLarge`] and [`ErrorKind::Io`] as [`read_bytes`];
    /// [`ErrorKind::NotUtf8`] when it is not UTF-8.
    pub fn read(path: &Path) -> Result<DiskFile, Error> {
        let name = path_name(path);
        let real = std::fs::canonicalize(path).map_err(|source| io_error(&name, "cannot read", source))?;
        let (dir, file_name) = split(&real, &name)?;
        // The folder first, then the file in it: the file read is in the folder recorded.
        let folder = Folder::open(dir).map_err(|source| io_error(&name, "cannot read", source))?;
        let folder_identity = folder
            .identity()
            .map_err(|source| io_error(&name, "cannot read", source))?;
        let (mut handle, meta) = read::open_in(&folder, file_name, &name, false)?;
        let bytes = read::read_handle(&mut handle, &name)?;
        let source = SourceFile::from_bytes(name, bytes.clone())?;
        Ok(DiskFile {
            path: path.to_path_buf(),
            real,
            bytes,
            source,
            links: sys::links(&meta),
            identity: sys::identity(&meta),
            folder_identity,
            read_only: meta.permissions().readonly(),
            held: None,
        })
    }

    /// Reads the file a folder walk met at `spot` (`path` is its name in messages): opened
    /// relative to the walked folder's handle, never through a link, and only when it is still
    /// the file walked (same device and inode) in a folder still in its place.
    ///
    /// # Errors
    /// [`ErrorKind::FileReplaced`] when the name now names another file or a link,
    /// [`ErrorKind::FolderReplaced`] when its folder was moved; then those of [`DiskFile::read`].
    pub(crate) fn read_in(spot: &Spot, path: &Path) -> Result<DiskFile, Error> {
        let name = path_name(path);
        let folder = &spot.folder;
        let replaced = || ErrorKind::FileReplaced.at(Location::new(name.clone(), 1, 1));
        // Never through a link (O_NOFOLLOW); whatever fails here is a swap when the name no
        // longer names the file walked.
        let walked = || {
            folder
                .entry(&spot.name)
                .is_ok_and(|now| !now.link && now.identity == spot.identity)
        };
        let (mut handle, meta) = match read::open_in(folder, &spot.name, &name, false) {
            Ok(opened) if sys::identity(&opened.1) == spot.identity => opened,
            Ok(_) => return Err(replaced()),
            Err(_) if !walked() => return Err(replaced()),
            Err(err) => return Err(err),
        };
        // Moved out of the tree since the walk: not read.
        if !folder.in_place().unwrap_or(false) {
            return Err(ErrorKind::FolderReplaced {
                folder: path_name(folder.path()),
            }
            .at(Location::new(name, 1, 1)));
        }
        let folder_identity = folder
            .identity()
            .map_err(|source| io_error(&name, "cannot read", source))?;
        let bytes = read::read_handle(&mut handle, &name)?;
        let source = SourceFile::from_bytes(name, bytes.clone())?;
        Ok(DiskFile {
            path: path.to_path_buf(),
            real: folder.path().join(&spot.name),
            bytes,
            source,
            links: sys::links(&meta),
            identity: sys::identity(&meta),
            folder_identity,
            read_only: meta.permissions().readonly(),
            held: Some(Arc::clone(folder)),
        })
    }

    /// The path read.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file that is read and written: the path with symbolic links resolved.
    #[must_use]
    pub fn resolved(&self) -> &Path {
        &self.real
    }

    /// How many hard links the file had when read. Writing gives the file a new inode, so with
    /// more than one the other names keep the old content.
    #[must_use]
    pub fn hard_links(&self) -> u64 {
        self.links
    }

    /// Whether `other` was read from the same file (device and inode), under this name or
    /// another (a hard link).
    #[must_use]
    pub fn same_file(&self, other: &DiskFile) -> bool {
        self.identity != (0, 0) && self.identity == other.identity
    }

    /// The text read.
    #[must_use]
    pub fn source(&self) -> &SourceFile {
        &self.source
    }

    fn name(&self) -> &str {
        self.source.name()
    }

    /// Replaces the file's content by `text`, atomically: the new text goes into a temp file
    /// beside it that is renamed over it, and only when the file on disk is still the one read,
    /// with the bytes read (the checks of the `files` module's documentation).
    ///
    /// # Errors
    /// [`ErrorKind::Changed`] when the file changed since it was read,
    /// [`ErrorKind::FolderReplaced`] when its folder is no longer the one read from,
    /// [`ErrorKind::OutputTooLarge`] for a text over [`MAX_FILE_BYTES`], an I/O error otherwise;
    /// on every error the file holds what it held.
    pub fn write(&self, text: &str) -> Result<(), Error> {
        write_all(&[(self, text)])
    }
}

/// The folder and the name of a resolved path.
fn split<'p>(real: &'p Path, name: &str) -> Result<(&'p Path, &'p std::ffi::OsStr), Error> {
    match (real.parent(), real.file_name()) {
        (Some(dir), Some(file_name)) => Ok((
            if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            },
            file_name,
        )),
        // The root folder.
        _ => Err(ErrorKind::NotRegular {
            what: "a directory".to_string(),
        }
        .at(Location::new(name, 1, 1))),
    }
}

fn io_error(name: &str, action: &str, source: std::io::Error) -> Error {
    ErrorKind::Io {
        action: action.to_string(),
        source: source.into(),
    }
    .at(Location::new(name, 1, 1))
}

#[cfg(all(test, unix))]
mod tests {
    use std::fs;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    use std::path::{Path, PathBuf};

    use super::write::{faults, temp_pid};
    use super::*;

    fn temp() -> tempfile::TempDir {
        tempfile::tempdir().expect("temp dir")
    }

    fn file(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, text).unwrap();
        path
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    }

    fn is_root() -> bool {
        // SAFETY: no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn writes_atomically_and_refuses_changed_files() {
        let dir = temp();
        let path = file(dir.path(), "m.py", "x = 1\n");
        let read = DiskFile::read(&path).unwrap();
        read.write("x = 2\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 2\n");
        let err = read.write("x = 3\n").unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Changed), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 2\n");
        assert_eq!(names(dir.path()), ["m.py"], "no temporary file is left behind");
    }

    #[test]
    fn keeps_mode_owner_and_group() {
        let dir = temp();
        let path = file(dir.path(), "m.py", "x = 1\n");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
        let owner = if is_root() {
            std::os::unix::fs::chown(&path, Some(1234), Some(5678)).unwrap();
            (1234, 5678)
        } else {
            eprintln!("not root: owner and group are checked to stay the caller's own only");
            let meta = fs::metadata(&path).unwrap();
            (meta.uid(), meta.gid())
        };
        DiskFile::read(&path).unwrap().write("x = 2\n").unwrap();
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o751);
        assert_eq!((meta.uid(), meta.gid()), owner);
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 2\n");
    }

    #[test]
    fn extended_attributes_are_kept() {
        let dir = temp();
        let path = file(dir.path(), "m.py", "x = 1\n");
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        let name = c"user.pysplice-test";
        // SAFETY: NUL-terminated path and name, a 5-byte value.
        let rc = unsafe { libc::setxattr(c_path.as_ptr(), name.as_ptr(), b"hello".as_ptr().cast(), 5, 0) };
        if rc != 0 {
            eprintln!(
                "skipping: this file system holds no user extended attributes ({})",
                std::io::Error::last_os_error()
            );
            return;
        }
        DiskFile::read(&path).unwrap().write("x = 2\n").unwrap();
        let mut value = [0u8; 16];
        // SAFETY: `value` has room for 16 bytes.
        let len = unsafe { libc::getxattr(c_path.as_ptr(), name.as_ptr(), value.as_mut_ptr().cast(), 16) };
        assert_eq!(len, 5, "{}", std::io::Error::last_os_error());
        assert_eq!(&value[..5], b"hello");
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 2\n");
    }

    #[test]
    fn a_target_with_a_255_byte_name_is_written() {
        let dir = temp();
        let name = format!("{}.py", "n".repeat(252));
        let path = file(dir.path(), &name, "x = 1\n");
        DiskFile::read(&path).unwrap().write("x = 2\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 2\n");
        assert_eq!(names(dir.path()), [name]);
    }

    #[test]
    fn temp_names_are_ours_only_when_exact() {
        assert_eq!(temp_pid(".pysplice-123-abcDEF0123.tmp"), Some(123));
        for name in [
            ".pysplice-123-abcDEF012.tmp",
            ".pysplice-123-abcDEF01234.tmp",
            ".pysplice--abcDEF0123.tmp",
            ".pysplice-12a-abcDEF0123.tmp",
            ".pysplice-123-abc/EF0123.tmp",
            "pysplice-123-abcDEF0123.tmp",
            ".pysplice-123-abcDEF0123.tmpx",
            ".m.py.pysplice-123.tmp",
        ] {
            assert_eq!(temp_pid(name), None, "{name}");
        }
    }

    #[test]
    fn a_symbolic_link_is_written_through() {
        let dir = temp();
        let target = file(dir.path(), "real.py", "x = 1\n");
        let link = dir.path().join("link.py");
        std::os::unix::fs::symlink("real.py", &link).unwrap();
        let read = DiskFile::read(&link).unwrap();
        assert_eq!(read.resolved(), fs::canonicalize(&target).unwrap());
        read.write("x = 2\n").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(&target).unwrap(), "x = 2\n");
        assert_eq!(names(dir.path()), ["link.py", "real.py"]);
    }

    #[test]
    fn a_link_retargeted_after_reading_is_not_followed_to_the_new_target() {
        let dir = temp();
        let first = file(dir.path(), "a.py", "x = 1\n");
        let other = file(dir.path(), "b.py", "x = 1\n");
        let link = dir.path().join("link.py");
        std::os::unix::fs::symlink(&first, &link).unwrap();
        let read = DiskFile::read(&link).unwrap();
        fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&other, &link).unwrap();
        read.write("x = 2\n").unwrap();
        assert_eq!(
            fs::read_to_string(&first).unwrap(),
            "x = 2\n",
            "the file read is written"
        );
        assert_eq!(fs::read_to_string(&other).unwrap(), "x = 1\n");
    }

    #[test]
    fn hard_links_are_counted_and_the_other_names_keep_the_old_bytes() {
        let dir = temp();
        let path = file(dir.path(), "m.py", "x = 1\n");
        let other = dir.path().join("other.py");
        fs::hard_link(&path, &other).unwrap();
        let read = DiskFile::read(&path).unwrap();
        assert_eq!(read.hard_links(), 2);
        read.write("x = 2\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 2\n");
        assert_eq!(fs::read_to_string(&other).unwrap(), "x = 1\n");
    }

    #[test]
    fn non_regular_files_are_refused_before_reading() {
        let dir = temp();
        let fifo = dir.path().join("fifo.py");
        mkfifo(&fifo);
        let link = dir.path().join("zero.py");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let cases: [(&Path, &str); 4] = [
            (&fifo, "a FIFO (named pipe), not a regular file"),
            (Path::new("/dev/zero"), "a character device, not a regular file"),
            (&link, "a character device, not a regular file"),
            (dir.path(), "a directory, not a regular file"),
        ];
        for (path, message) in cases {
            let err = DiskFile::read(path).unwrap_err();
            assert!(matches!(err.kind(), ErrorKind::NotRegular { .. }), "{err}");
            assert!(err.to_string().contains(message), "{err}");
            let err = read_bytes(path).unwrap_err();
            assert!(matches!(err.kind(), ErrorKind::NotRegular { .. }), "{err}");
        }
    }

    #[test]
    fn files_over_the_limit_are_refused() {
        let dir = temp();
        let path = dir.path().join("big.py");
        let big = fs::File::create(&path).unwrap();
        big.set_len(MAX_FILE_BYTES + 1).unwrap();
        let err = DiskFile::read(&path).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::TooLarge { size, .. } if *size == MAX_FILE_BYTES + 1),
            "{err}"
        );
        assert!(
            err.to_string().contains("more than the limit of 16777216 bytes"),
            "{err}"
        );
        big.set_len(MAX_FILE_BYTES).unwrap();
        assert_eq!(read_bytes(&path).unwrap().len() as u64, MAX_FILE_BYTES);
    }

    #[test]
    fn a_target_replaced_by_a_fifo_after_reading_is_left_alone() {
        let dir = temp();
        let path = file(dir.path(), "m.py", "x = 1\n");
        let read = DiskFile::read(&path).unwrap();
        fs::remove_file(&path).unwrap();
        mkfifo(&path);
        let err = read.write("x = 2\n").unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::NotRegular { .. }), "{err}");
        assert!(fs::symlink_metadata(&path).unwrap().file_type().is_fifo());
        assert_eq!(names(dir.path()), ["m.py"]);
    }

    #[test]
    fn a_target_replaced_after_reading_is_changed() {
        // Same bytes, new inode, as another writer's rename leaves it: not the file read, refused.
        let dir = temp();
        let path = file(dir.path(), "m.py", "x = 1\n");
        let read = DiskFile::read(&path).unwrap();
        let other = file(dir.path(), "other", "x = 1\n");
        fs::rename(&other, &path).unwrap();
        let err = read.write("x = 2\n").unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Changed), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 1\n");
        // Different bytes: refused.
        let read = DiskFile::read(&path).unwrap();
        let other = file(dir.path(), "other", "x = 9\n");
        fs::rename(&other, &path).unwrap();
        assert!(matches!(
            (read.write("x = 3\n").unwrap_err()).kind(),
            ErrorKind::Changed
        ));
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 9\n");
        assert_eq!(names(dir.path()), ["m.py"]);
    }

    #[test]
    fn a_folder_swapped_for_a_link_after_reading_is_not_written_through() {
        let dir = temp();
        let d = dir.path().join("d");
        fs::create_dir(&d).unwrap();
        let path = file(&d, "m.py", "x = 1\n");
        let victim = dir.path().join("victim");
        fs::create_dir(&victim).unwrap();
        let precious = file(&victim, "m.py", "x = 1\n");
        let read = DiskFile::read(&path).unwrap();
        fs::rename(&d, dir.path().join("d.old")).unwrap();
        std::os::unix::fs::symlink(&victim, &d).unwrap();
        let err = read.write("x = 2\n").unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::FolderReplaced { .. }), "{err}");
        assert!(
            err.to_string().contains(
                "is no longer the folder the file was read from (moved, or replaced by a link); nothing was written"
            ),
            "{err}"
        );
        assert_eq!(fs::read_to_string(&precious).unwrap(), "x = 1\n");
        assert_eq!(names(&victim), ["m.py"]);
        assert_eq!(fs::read_to_string(dir.path().join("d.old/m.py")).unwrap(), "x = 1\n");
        // A folder higher up swapped the same way: refused too.
        fs::remove_file(&d).unwrap();
        fs::rename(dir.path().join("d.old"), &d).unwrap();
        let top = dir.path().join("top");
        fs::create_dir_all(top.join("d")).unwrap();
        let path = file(&top.join("d"), "m.py", "x = 1\n");
        let other_top = dir.path().join("other");
        fs::create_dir_all(other_top.join("d")).unwrap();
        let precious = file(&other_top.join("d"), "m.py", "x = 1\n");
        let read = DiskFile::read(&path).unwrap();
        fs::rename(&top, dir.path().join("top.old")).unwrap();
        std::os::unix::fs::symlink(&other_top, &top).unwrap();
        let err = read.write("x = 2\n").unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::FolderReplaced { .. }), "{err}");
        assert_eq!(fs::read_to_string(&precious).unwrap(), "x = 1\n");
        assert_eq!(
            fs::read_to_string(dir.path().join("top.old/d/m.py")).unwrap(),
            "x = 1\n"
        );
        // A folder moved away, nothing in its place.
        let read = DiskFile::read(&d.join("m.py")).unwrap();
        fs::rename(&d, dir.path().join("gone")).unwrap();
        let err = read.write("x = 2\n").unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::FolderReplaced { .. }), "{err}");
        assert_eq!(fs::read_to_string(dir.path().join("gone/m.py")).unwrap(), "x = 1\n");
    }

    #[test]
    fn a_text_over_the_limit_is_never_written() {
        let dir = temp();
        let path = file(dir.path(), "m.py", "x = 1\n");
        let read = DiskFile::read(&path).unwrap();
        let big = "#".repeat(usize::try_from(MAX_FILE_BYTES).unwrap() + 1);
        let err = read.write(&big).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::OutputTooLarge { size, .. } if *size == MAX_FILE_BYTES + 1),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("the new text would make the file 16777217 bytes, more than the limit of 16777216 bytes"),
            "{err}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 1\n");
        assert_eq!(names(dir.path()), ["m.py"]);
    }

    #[test]
    fn stale_temp_files_of_dead_processes_are_removed_and_nothing_else() {
        let dir = temp();
        let path = file(dir.path(), "m.py", "x = 1\n");
        // A process id no process has: Linux hands out ids below 2^22 (PID_MAX_LIMIT), other
        // systems fewer; the first id from there that the liveness check calls dead.
        let dead = (1_u32 << 22..).find(|&pid| !super::sys::alive(pid)).unwrap();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let plant = |name: &str, old: bool| {
            let p = file(dir.path(), name, "junk");
            if old {
                fs::File::options()
                    .write(true)
                    .open(&p)
                    .unwrap()
                    .set_modified(hour_ago)
                    .unwrap();
            }
        };
        let stale = format!(".pysplice-{dead}-abcdefghij.tmp");
        plant(&stale, true);
        plant(&format!(".pysplice-{dead}-abcdefghik.tmp"), false); // too recent
        plant(".pysplice-1-abcdefghij.tmp", true); // pid 1 is alive
        plant(&format!(".pysplice-{dead}-abcdefghi.tmp"), true); // not our pattern
        let link = format!(".pysplice-{dead}-abcdefghil.tmp");
        std::os::unix::fs::symlink("m.py", dir.path().join(&link)).unwrap();
        let before = names(dir.path());
        DiskFile::read(&path).unwrap().write("x = 2\n").unwrap();
        let after = names(dir.path());
        let expected: Vec<String> = before.into_iter().filter(|n| *n != stale).collect();
        assert_eq!(after, expected);
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 2\n");
    }

    fn three(dir: &Path) -> Vec<DiskFile> {
        ["a.py", "b.py", "c.py"]
            .iter()
            .map(|n| DiskFile::read(&file(dir, n, &format!("# {n}\n"))).unwrap())
            .collect()
    }

    #[test]
    fn several_files_are_written_all_or_none() {
        let dir = temp();
        let files = three(dir.path());
        let changes: Vec<(&DiskFile, &str)> = files.iter().map(|f| (f, "new\n")).collect();
        faults::FAIL_COMMIT.with(|f| f.set(Some(2)));
        let err = write_all(&changes).unwrap_err();
        faults::FAIL_COMMIT.with(|f| f.set(None));
        assert!(
            err.to_string().contains("c.py:1:1: cannot write: injected failure"),
            "{err}"
        );
        for n in ["a.py", "b.py", "c.py"] {
            assert_eq!(fs::read_to_string(dir.path().join(n)).unwrap(), format!("# {n}\n"));
        }
        assert_eq!(names(dir.path()), ["a.py", "b.py", "c.py"]);
        // The files put back are new inodes of the old bytes: read again, then written.
        let files: Vec<DiskFile> = ["a.py", "b.py", "c.py"]
            .iter()
            .map(|n| DiskFile::read(&dir.path().join(n)).unwrap())
            .collect();
        let changes: Vec<(&DiskFile, &str)> = files.iter().map(|f| (f, "new\n")).collect();
        write_all(&changes).unwrap();
        for n in ["a.py", "b.py", "c.py"] {
            assert_eq!(fs::read_to_string(dir.path().join(n)).unwrap(), "new\n");
        }
        assert_eq!(names(dir.path()), ["a.py", "b.py", "c.py"]);
    }

    #[test]
    fn a_failed_rollback_names_the_files_written() {
        let dir = temp();
        let files = three(dir.path());
        let changes: Vec<(&DiskFile, &str)> = files.iter().map(|f| (f, "new\n")).collect();
        faults::FAIL_COMMIT.with(|f| f.set(Some(2)));
        faults::FAIL_ROLLBACK.with(|f| f.set(true));
        let err = write_all(&changes).unwrap_err();
        faults::FAIL_COMMIT.with(|f| f.set(None));
        faults::FAIL_ROLLBACK.with(|f| f.set(false));
        let ErrorKind::PartialWrite {
            written,
            restored,
            failures,
            ..
        } = err.kind()
        else {
            panic!("{err}");
        };
        let a = dir.path().join("a.py").display().to_string();
        let b = dir.path().join("b.py").display().to_string();
        assert_eq!(&written[..], [b.clone(), a.clone()]);
        assert!(restored.is_empty());
        assert!(
            err.to_string().contains(&format!("{b}, {a} hold the new text")),
            "{err}"
        );
        assert_eq!(fs::read_to_string(&a).unwrap(), "new\n");
        assert_eq!(fs::read_to_string(&b).unwrap(), "new\n");
        assert_eq!(fs::read_to_string(dir.path().join("c.py")).unwrap(), "# c.py\n");
        // The copies of the old bytes are kept and named, for putting back by hand.
        assert_eq!(failures.len(), 2);
        for (failure, (name, old)) in failures.iter().zip([(&b, "# b.py\n"), (&a, "# a.py\n")]) {
            let (head, copy) = failure.split_once("; its old bytes are in ").expect(failure);
            assert_eq!(head, format!("{name}: injected failure"));
            assert_eq!(fs::read_to_string(copy).unwrap(), old, "{failure}");
            assert!(err.to_string().contains(failure.as_str()), "{err}");
            // Under a name that the stale-temp cleaner never takes.
            let kept = Path::new(copy).file_name().unwrap().to_str().unwrap();
            assert!(kept.starts_with(".pysplice-kept-") && kept.ends_with(".orig"), "{kept}");
            assert_eq!(temp_pid(kept), None, "{kept}");
            assert_eq!(
                Path::new(copy).parent(),
                Some(fs::canonicalize(dir.path()).unwrap().as_path())
            );
        }
        // An hour later, a dead process's temp file is cleaned; the kept copies are not.
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for failure in failures.iter() {
            let copy = failure.split_once("; its old bytes are in ").unwrap().1;
            fs::File::options()
                .write(true)
                .open(copy)
                .unwrap()
                .set_modified(hour_ago)
                .unwrap();
        }
        let before = names(dir.path());
        DiskFile::read(&dir.path().join("c.py")).unwrap().write("x\n").unwrap();
        assert_eq!(names(dir.path()), before);
    }

    #[test]
    fn hundreds_of_files_in_one_change() {
        // Two descriptors per file while the change is staged: 200 files stay well under the
        // usual limit of 1024.
        let dir = temp();
        let files: Vec<DiskFile> = (0..200)
            .map(|i| DiskFile::read(&file(dir.path(), &format!("m{i}.py"), "x = 1\n")).unwrap())
            .collect();
        let changes: Vec<(&DiskFile, &str)> = files.iter().map(|f| (f, "x = 2\n")).collect();
        write_all(&changes).unwrap();
        for f in &files {
            assert_eq!(fs::read_to_string(f.path()).unwrap(), "x = 2\n");
        }
        assert_eq!(names(dir.path()).len(), 200, "no temp file is left");
    }

    #[test]
    fn one_file_twice_is_refused() {
        let dir = temp();
        let path = file(dir.path(), "m.py", "x = 1\n");
        let link = dir.path().join("l.py");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let (a, b) = (DiskFile::read(&path).unwrap(), DiskFile::read(&link).unwrap());
        let err = write_all(&[(&a, "x = 2\n"), (&b, "x = 3\n")]).unwrap_err();
        assert!(err.to_string().contains("the same file is given twice"), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 1\n");
    }

    #[test]
    fn two_names_of_one_file_are_each_written() {
        // Hard links: each name gets its text and becomes a file of its own (as `sed -i` on
        // both names), under one lock.
        let dir = temp();
        let path = file(dir.path(), "m.py", "x = 1\n");
        let hard = dir.path().join("h.py");
        fs::hard_link(&path, &hard).unwrap();
        let (a, c) = (DiskFile::read(&path).unwrap(), DiskFile::read(&hard).unwrap());
        assert!(a.same_file(&c));
        write_all(&[(&a, "x = 2\n"), (&c, "x = 2\n")]).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 2\n");
        assert_eq!(fs::read_to_string(&hard).unwrap(), "x = 2\n");
        assert_eq!(fs::metadata(&path).unwrap().nlink(), 1);
        assert_eq!(names(dir.path()), ["h.py", "m.py"]);
    }

    #[test]
    fn read_text_names_the_bad_byte() {
        let dir = temp();
        let path = dir.path().join("r.toml");
        fs::write(&path, b"a = 1\nb = \xff\n").unwrap();
        let err = read_text(&path).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::NotUtf8 { .. }), "{err}");
        assert_eq!(err.location().line, 2);
    }
}
