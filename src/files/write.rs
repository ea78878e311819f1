//! Writing: every file of one change, or none. Each file is replaced by a rename of an exclusive
//! temporary file, under an advisory lock, after re-checking that it still holds the bytes read.
//!
//! Each folder is opened once and must be the folder each of its files was read from (same
//! device and inode); every later step names files relative to it ([`Folder`]), so a folder of
//! the path moved or replaced by a link meanwhile redirects nothing.
//!
//! The steps, per file, in path order (so that two processes lock shared files in one order):
//! lock the file, which must be the file read (same device and inode) and still the one its name
//! names (a writer that held the lock may have replaced it), compare its bytes with those read,
//! write the new text into a temp file created exclusively under an unpredictable name (owner,
//! group, mode and extended attributes copied on the handle before any byte is written), and
//! fsync it. Only when every file is staged: per file, compare the bytes once more and rename. A
//! failed rename puts back the files already renamed (from backups staged the same way); a backup
//! that cannot be put back is kept under a name the stale-temp cleaner never takes. The folders
//! are fsynced at the end.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::hash::{BuildHasher, RandomState};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::folder::Folder;
use super::{io_error, read, sys, DiskFile};
use crate::error::{Error, ErrorKind};
use crate::location::Location;

/// How long to wait for another process's lock on a file before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// A temp file of a dead process is removed only when it is at least this old (a process in
/// another PID namespace may look dead while it writes).
const STALE_AFTER: Duration = Duration::from_secs(15 * 60);

/// Temp file names: `.pysplice-<pid>-<10 random letters or digits>.tmp`, 35 bytes at most
/// whatever the target's name.
const TEMP_PREFIX: &str = ".pysplice-";
const TEMP_SUFFIX: &str = ".tmp";
const TEMP_RANDOM: usize = 10;

/// The name a backup is kept under when it cannot be put back:
/// `.pysplice-kept-<pid>-<10 random letters or digits>.orig`, which the cleaner never takes (and
/// which no scan of `.py` files picks up).
const KEPT_PREFIX: &str = ".pysplice-kept-";
const KEPT_SUFFIX: &str = ".orig";

/// Writes `text` into each file, all or nothing. See the module documentation.
///
/// # Errors
/// [`ErrorKind::OutputTooLarge`] when a text is over [`read::MAX_FILE_BYTES`] (checked before
/// anything else), [`ErrorKind::Changed`] when a file is no longer the file read or no longer
/// holds the bytes read, [`ErrorKind::FolderReplaced`] when a folder is no longer the one read
/// from, [`ErrorKind::Locked`] when another process keeps a file locked,
/// [`ErrorKind::NotRegular`] when it is no longer a regular file, [`ErrorKind::Io`] when staging
/// or renaming fails: in all these cases every file holds what it held before.
/// [`ErrorKind::PartialWrite`] when putting back the files already written failed too: it names
/// the files that hold the new text and where their old bytes are kept.
pub fn write_all(changes: &[(&DiskFile, &str)]) -> Result<(), Error> {
    for (file, _) in changes {
        if file.read_only {
            let source = io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the file is read-only (no write permission); make it writable (chmod u+w) to patch it",
            );
            return Err(io_error(file.name(), "cannot write", source));
        }
    }
    for (file, text) in changes {
        if text.len() as u64 > read::MAX_FILE_BYTES {
            return Err(ErrorKind::OutputTooLarge {
                recipe: None,
                size: text.len() as u64,
                limit: read::MAX_FILE_BYTES,
            }
            .at(Location::new(file.name(), 1, 1)));
        }
    }
    let mut order: Vec<&(&DiskFile, &str)> = changes.iter().collect();
    order.sort_by(|a, b| a.0.real.cmp(&b.0.real));
    // One name twice (a link and its target) would be planned twice from the same bytes.
    // Two names of one file (hard links) are two files to the user: each name gets the new
    // text (a file of its own, as with `sed -i`), under the one lock its first name takes.
    let mut paths = std::collections::HashSet::new();
    for (file, _) in &order {
        if !paths.insert(&file.real) {
            let source = io::Error::new(io::ErrorKind::InvalidInput, "the same file is given twice");
            return Err(io_error(file.name(), "cannot write", source));
        }
    }
    // Each folder opened once, and only when it is the folder its files were read from; a
    // folder of a walk is the handle the file was read through, still in its place.
    let mut folders: BTreeMap<&Path, Arc<Folder>> = BTreeMap::new();
    for (file, _) in &order {
        let dir = folder_of(file);
        if !folders.contains_key(dir) {
            let folder = match &file.held {
                Some(held) if held.in_place().unwrap_or(false) => Arc::clone(held),
                Some(_) => return Err(folder_replaced(file, dir)),
                None => Arc::new(open_folder(file, dir)?),
            };
            remove_stale(&folder);
            folders.insert(dir, folder);
        }
        let same = folders[dir].identity().is_ok_and(|id| id == file.folder_identity);
        if !same {
            return Err(folder_replaced(file, dir));
        }
    }
    let backups = changes.len() > 1;
    let mut staged = Vec::with_capacity(order.len());
    let mut locked = std::collections::HashSet::new();
    for (file, text) in order {
        // The second name of a file locked already: its lock is held (a second `flock` on
        // another handle of the same file would wait on the first).
        let lock = file.identity == (0, 0) || locked.insert(file.identity);
        staged.push(Staged::new(file, &folders[folder_of(file)], text, backups, lock)?);
    }
    for k in 0..staged.len() {
        if let Err(err) = staged[k].commit(k) {
            return Err(roll_back(&mut staged[..k], err));
        }
    }
    drop(staged);
    for folder in folders.values() {
        // The renames are done; a folder that cannot be synced does not undo them.
        let _ = folder.sync();
    }
    Ok(())
}

/// Opens the folder `dir` of `file`, refusing one that is not the folder it was read from.
fn open_folder(file: &DiskFile, dir: &Path) -> Result<Folder, Error> {
    let folder = Folder::open(dir).map_err(|err| {
        // Gone, or a link or a non-folder in its place.
        let moved = err.kind() == io::ErrorKind::NotFound
            || err.raw_os_error().is_some_and(|code| code == ELOOP || code == ENOTDIR);
        if moved {
            folder_replaced(file, dir)
        } else {
            io_error(file.name(), "cannot write", err)
        }
    })?;
    match folder.identity() {
        Ok(id) if id == file.folder_identity => Ok(folder),
        Ok(_) => Err(folder_replaced(file, dir)),
        Err(err) => Err(io_error(file.name(), "cannot write", err)),
    }
}

#[cfg(unix)]
const ELOOP: i32 = libc::ELOOP;
#[cfg(unix)]
const ENOTDIR: i32 = libc::ENOTDIR;
#[cfg(not(unix))]
const ELOOP: i32 = i32::MIN;
#[cfg(not(unix))]
const ENOTDIR: i32 = i32::MIN;

fn folder_replaced(file: &DiskFile, dir: &Path) -> Error {
    ErrorKind::FolderReplaced {
        folder: dir.display().to_string(),
    }
    .at(Location::new(file.name(), 1, 1))
}

/// A file created in a folder, removed again when dropped unless it was renamed or kept.
struct Temp<'d> {
    folder: &'d Folder,
    name: OsString,
    /// Open while it is written and renamed; closed for a backup (a change to many files
    /// holds two descriptors per file, not three).
    file: Option<File>,
    armed: bool,
}

impl Temp<'_> {
    /// The name no longer needs removing (renamed into place, or kept on purpose).
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.folder.remove(&self.name);
        }
    }
}

/// One file ready to be renamed into place.
struct Staged<'f> {
    file: &'f DiskFile,
    folder: &'f Folder,
    /// The file as it is now, locked until the end (dropping it releases the lock).
    guard: File,
    guard_meta: Metadata,
    /// The new text, until renamed.
    temp: Option<Temp<'f>>,
    /// The renamed file, locked so that another writer waits until the change is final.
    _placed: Option<File>,
    /// The old bytes, owner and mode, to put back when a later file fails.
    backup: Option<Temp<'f>>,
}

impl<'f> Staged<'f> {
    fn new(file: &'f DiskFile, folder: &'f Folder, text: &str, backup: bool, lock: bool) -> Result<Staged<'f>, Error> {
        let name = file.name();
        let (mut guard, guard_meta) = lock_current(file, folder, lock)?;
        if read::read_handle(&mut guard, name)? != file.bytes {
            return Err(changed(name));
        }
        let like = (&guard, &guard_meta);
        let temp = stage(folder, like, text.as_bytes()).map_err(|e| io_error(name, "cannot write", e))?;
        // Nobody else has the temp file open yet, so the lock is ours at once.
        if let Some(handle) = &temp.file {
            let _ = sys::try_lock(handle);
        }
        let backup = if backup {
            let mut old = stage(folder, like, &file.bytes).map_err(|e| io_error(name, "cannot write", e))?;
            old.file = None;
            Some(old)
        } else {
            None
        };
        Ok(Staged {
            file,
            folder,
            guard,
            guard_meta,
            temp: Some(temp),
            _placed: None,
            backup,
        })
    }

    /// Re-checks, then renames the temp file over the target.
    fn commit(&mut self, _index: usize) -> Result<(), Error> {
        let name = self.file.name();
        let still = self
            .folder
            .entry(file_name(self.file))
            .is_ok_and(|now| now.identity == sys::identity(&self.guard_meta));
        if !still || read::read_handle(&mut self.guard, name)? != self.file.bytes {
            return Err(changed(name));
        }
        #[cfg(test)]
        if faults::FAIL_COMMIT.with(std::cell::Cell::get) == Some(_index) {
            return Err(io_error(name, "cannot write", io::Error::other("injected failure")));
        }
        let Some(mut temp) = self.temp.take() else {
            return Ok(());
        };
        match self.folder.rename(&temp.name, file_name(self.file)) {
            Ok(()) => {
                temp.disarm();
                self._placed = temp.file.take();
                Ok(())
            }
            Err(err) => {
                self.temp = Some(temp);
                Err(io_error(name, "cannot write", err))
            }
        }
    }
}

/// Puts back the files already renamed; `cause` is what stopped the transaction.
fn roll_back(done: &mut [Staged<'_>], cause: Error) -> Error {
    let mut restored = Vec::new();
    let mut written = Vec::new();
    let mut failures = Vec::new();
    for s in done.iter_mut().rev() {
        let name = s.file.name().to_string();
        let Some(mut backup) = s.backup.take() else {
            failures.push(format!("{name}: no copy of its old bytes"));
            written.push(name);
            continue;
        };
        #[cfg(test)]
        let result = if faults::FAIL_ROLLBACK.with(std::cell::Cell::get) {
            Err(io::Error::other("injected failure"))
        } else {
            s.folder.rename(&backup.name, file_name(s.file))
        };
        #[cfg(not(test))]
        let result = s.folder.rename(&backup.name, file_name(s.file));
        match result {
            Ok(()) => {
                backup.disarm();
                restored.push(name);
            }
            Err(err) => {
                // The copy of the old bytes stays, for putting back by hand.
                let kept = keep(&mut backup);
                failures.push(format!("{name}: {err}; its old bytes are in {}", kept.display()));
                written.push(name);
            }
        }
    }
    if written.is_empty() {
        return cause;
    }
    let location = cause.location().clone();
    ErrorKind::PartialWrite {
        cause: Box::new(cause),
        written: written.into(),
        restored: restored.into(),
        failures: failures.into(),
    }
    .at(location)
}

/// Keeps a backup for good: renamed to a name that the stale-temp cleaner never takes (or, when
/// even that fails, left under its temp name). Gives its path.
fn keep(backup: &mut Temp<'_>) -> std::path::PathBuf {
    backup.disarm();
    for _ in 0..16 {
        let kept = OsString::from(format!(
            "{KEPT_PREFIX}{}-{}{KEPT_SUFFIX}",
            std::process::id(),
            random_name()
        ));
        // Never over an existing name: a link of that name is not replaced.
        if backup.folder.entry(&kept).is_ok() {
            continue;
        }
        if backup.folder.rename(&backup.name, &kept).is_ok() {
            return backup.folder.path().join(kept);
        }
        break;
    }
    backup.folder.path().join(&backup.name)
}

/// Opens and locks the file its name names now (`lock`: unless this process holds its lock
/// already, through another name), checking on the handle that it is still a regular file,
/// still the file read, and still the one its name names once locked.
fn lock_current(file: &DiskFile, folder: &Folder, lock: bool) -> Result<(File, Metadata), Error> {
    let name = file.name();
    let start = Instant::now();
    // Never through a link: the name in the folder read from must still be the file read.
    let (guard, meta) = read::open_in(folder, file_name(file), name, true)?;
    if sys::identity(&meta) != file.identity {
        return Err(changed(name));
    }
    if lock {
        loop {
            match sys::try_lock(&guard).map_err(|e| io_error(name, "cannot lock", e))? {
                sys::Lock::Held | sys::Lock::Unsupported => break,
                sys::Lock::Busy if start.elapsed() > LOCK_WAIT => {
                    return Err(ErrorKind::Locked.at(Location::new(name, 1, 1)))
                }
                sys::Lock::Busy => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }
    // The previous holder of the lock may have renamed a new file into place.
    let same = folder
        .entry(file_name(file))
        .is_ok_and(|now| now.identity == sys::identity(&meta));
    if !same {
        return Err(changed(name));
    }
    Ok((guard, meta))
}

/// A new temp file in `folder` holding `bytes`, with the owner, group, mode and extended
/// attributes of `like`.
fn stage<'d>(folder: &'d Folder, (like_file, like): (&File, &Metadata), bytes: &[u8]) -> io::Result<Temp<'d>> {
    let mut tries = 0;
    let (name, handle) = loop {
        let name = OsString::from(format!(
            "{TEMP_PREFIX}{}-{}{TEMP_SUFFIX}",
            std::process::id(),
            random_name()
        ));
        // O_CREAT|O_EXCL: a planted file or link of that name makes creation fail, never followed.
        match folder.create_new(&name) {
            Ok(handle) => break (name, handle),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists && tries < 100 => tries += 1,
            Err(err) => return Err(err),
        }
    };
    let mut temp = Temp {
        folder,
        name,
        file: Some(handle),
        armed: true,
    };
    let Some(handle) = temp.file.as_mut() else {
        return Err(io::Error::other("the temp file is not open"));
    };
    // Owner first: changing the owner clears set-id bits, the mode then sets what it should be.
    let owner_kept = sys::copy_owner(handle, like);
    sys::copy_mode(handle, like, owner_kept)?;
    sys::copy_xattrs(like_file, handle);
    handle.write_all(bytes)?;
    handle.sync_all()?;
    Ok(temp)
}

/// Ten letters or digits nobody can guess: SipHash under the process's random keys (what std's
/// `HashMap` seeds itself with) over a counter and the time.
fn random_name() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut value = RandomState::new().hash_one((COUNTER.fetch_add(1, Ordering::Relaxed), now));
    let mut out = String::with_capacity(TEMP_RANDOM);
    for _ in 0..TEMP_RANDOM {
        out.push(char::from(ALPHABET[(value % 62) as usize]));
        value /= 62;
    }
    out
}

/// The pid in a temp file name of ours (`.pysplice-<pid>-<random>.tmp`), or `None`.
pub(crate) fn temp_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(TEMP_PREFIX)?.strip_suffix(TEMP_SUFFIX)?;
    let (pid, random) = rest.split_once('-')?;
    let digits = !pid.is_empty() && pid.len() <= 10 && pid.bytes().all(|b| b.is_ascii_digit());
    let random_ok = random.len() == TEMP_RANDOM && random.bytes().all(|b| b.is_ascii_alphanumeric());
    if digits && random_ok {
        pid.parse().ok()
    } else {
        None
    }
}

/// Removes temp files that a dead process of ours left in `folder`: only regular files (never a
/// link) named exactly like ours, owned by this user, old enough, whose process is gone.
fn remove_stale(folder: &Folder) {
    let Ok(names) = folder.names() else {
        return;
    };
    for name in names {
        let Some(pid) = name.to_str().and_then(temp_pid) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(entry) = folder.entry(&name) else {
            continue;
        };
        let old = entry
            .modified
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if entry.kind.is_none() && entry.mine && old && !sys::alive(pid) {
            // unlinkat never follows a link: at worst it removes a name swapped in meanwhile.
            let _ = folder.remove(&name);
        }
    }
}

/// The folder a file was read from (its resolved path's parent).
fn folder_of(file: &DiskFile) -> &Path {
    file.real
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The file's name in that folder.
fn file_name(file: &DiskFile) -> &OsStr {
    file.real.file_name().unwrap_or(file.real.as_os_str())
}

fn changed(name: &str) -> Error {
    ErrorKind::Changed.at(Location::new(name, 1, 1))
}

/// Failure injection for the unit tests of the rollback.
#[cfg(test)]
pub(crate) mod faults {
    use std::cell::Cell;

    thread_local! {
        /// Fail the commit of the file at this index (in path order).
        pub(crate) static FAIL_COMMIT: Cell<Option<usize>> = const { Cell::new(None) };
        /// Fail every rollback.
        pub(crate) static FAIL_ROLLBACK: Cell<bool> = const { Cell::new(false) };
    }
}
