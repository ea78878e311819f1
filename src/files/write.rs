//! Writing: every file of one change, or none. Each file is replaced by a rename of an exclusive
//! temporary file, under an advisory lock, after re-checking that it still holds the bytes read.
//!
//! The steps, per file, in path order (so that two processes lock shared files in one order):
//! lock the file (and make sure the path still names the locked file: a writer that held the
//! lock may have replaced it), compare its bytes with those read, write the new text into a temp
//! file created exclusively under an unpredictable name (owner, group, mode and extended
//! attributes copied on the handle before any byte is written), and fsync it. Only when every file is staged: per file, compare
//! the bytes once more and rename. A failed rename puts back the files already renamed (from
//! backups staged the same way); the folders are fsynced at the end.

use std::fs::{self, File, Metadata};
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use tempfile::{NamedTempFile, TempPath};

use super::{io_error, read, sys, DiskFile};
use crate::error::{Error, ErrorKind, Location};

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

/// Writes `text` into each file, all or nothing. See the module documentation.
///
/// # Errors
/// [`ErrorKind::Changed`] when a file no longer holds the bytes read, [`ErrorKind::Locked`] when another
/// process keeps a file locked, [`ErrorKind::NotRegular`] when it is no longer a regular file,
/// [`ErrorKind::Io`] when staging or renaming fails: in all these cases every file holds what it held
/// before. [`ErrorKind::PartialWrite`] when putting back the files already written failed too: it
/// names the files that hold the new text.
pub fn write_all(changes: &[(&DiskFile, &str)]) -> Result<(), Error> {
    let mut order: Vec<&(&DiskFile, &str)> = changes.iter().collect();
    order.sort_by(|a, b| a.0.real.cmp(&b.0.real));
    // One file under two names (a link, a hard link) would be planned twice from the same bytes,
    // and its second lock would wait on the first.
    let mut paths = std::collections::HashSet::new();
    let mut inodes = std::collections::HashSet::new();
    for (file, _) in &order {
        let known = file.identity != (0, 0);
        if !paths.insert(&file.real) || (known && !inodes.insert(file.identity)) {
            let source = io::Error::new(io::ErrorKind::InvalidInput, "the same file is given twice");
            return Err(io_error(file.name(), "cannot write", source));
        }
    }
    let backups = changes.len() > 1;
    let mut staged = Vec::with_capacity(order.len());
    let mut cleaned = std::collections::BTreeSet::new();
    for (file, text) in order {
        if cleaned.insert(folder(file)) {
            remove_stale(folder(file));
        }
        staged.push(Staged::new(file, text, backups)?);
    }
    for k in 0..staged.len() {
        if let Err(err) = staged[k].commit(k) {
            return Err(roll_back(&mut staged[..k], err));
        }
    }
    for path in cleaned {
        // The renames are done; a folder that cannot be synced does not undo them.
        let _ = File::open(path).and_then(|f| f.sync_all());
    }
    Ok(())
}

/// One file ready to be renamed into place.
struct Staged<'f> {
    file: &'f DiskFile,
    /// The file as it is now, locked until the end (dropping it releases the lock).
    guard: File,
    guard_meta: Metadata,
    /// The new text, until renamed.
    temp: Option<NamedTempFile>,
    /// The renamed file, locked so that another writer waits until the change is final.
    _placed: Option<File>,
    /// The old bytes, owner and mode, to put back when a later file fails (closed: a change to
    /// many files holds two descriptors per file, not three).
    backup: Option<TempPath>,
}

impl<'f> Staged<'f> {
    fn new(file: &'f DiskFile, text: &str, backup: bool) -> Result<Staged<'f>, Error> {
        let name = file.name();
        let (mut guard, guard_meta) = lock_current(file)?;
        if read::read_handle(&mut guard, name)? != file.bytes {
            return Err(changed(name));
        }
        let folder = folder(file);
        let temp =
            stage(folder, (&guard, &guard_meta), text.as_bytes()).map_err(|e| io_error(name, "cannot write", e))?;
        // Nobody else has the temp file open yet, so the lock is ours at once.
        let _ = sys::try_lock(temp.as_file());
        let backup = if backup {
            let old =
                stage(folder, (&guard, &guard_meta), &file.bytes).map_err(|e| io_error(name, "cannot write", e))?;
            Some(old.into_temp_path())
        } else {
            None
        };
        Ok(Staged {
            file,
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
        let still = fs::symlink_metadata(&self.file.real)
            .is_ok_and(|now| sys::identity(&now) == sys::identity(&self.guard_meta));
        if !still || read::read_handle(&mut self.guard, name)? != self.file.bytes {
            return Err(changed(name));
        }
        #[cfg(test)]
        if faults::FAIL_COMMIT.with(std::cell::Cell::get) == Some(_index) {
            return Err(io_error(name, "cannot write", io::Error::other("injected failure")));
        }
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        match temp.persist(&self.file.real) {
            Ok(placed) => {
                self._placed = Some(placed);
                Ok(())
            }
            Err(err) => {
                self.temp = Some(err.file);
                Err(io_error(name, "cannot write", err.error))
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
        let Some(backup) = s.backup.take() else {
            failures.push(format!("{name}: no copy of its old bytes"));
            written.push(name);
            continue;
        };
        #[cfg(test)]
        let result = if faults::FAIL_ROLLBACK.with(std::cell::Cell::get) {
            Err(tempfile::PathPersistError {
                error: io::Error::other("injected failure"),
                path: backup,
            })
        } else {
            backup.persist(&s.file.real)
        };
        #[cfg(not(test))]
        let result = backup.persist(&s.file.real);
        match result {
            Ok(()) => restored.push(name),
            Err(err) => {
                // The copy of the old bytes stays, for putting back by hand.
                let kept = err
                    .path
                    .keep()
                    .map_or_else(|_| "lost".to_string(), |p| p.display().to_string());
                failures.push(format!("{name}: {}; its old bytes are in {kept}", err.error));
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

/// Opens and locks the file the path names now, checking on the handle that it is still a
/// regular file.
fn lock_current(file: &DiskFile) -> Result<(File, Metadata), Error> {
    let name = file.name();
    let start = Instant::now();
    loop {
        // Never through a link: the path resolved when the file was read must still be the file.
        let (guard, meta) = read::open_regular(&file.real, name, read::Open::ToLock)?;
        loop {
            match sys::try_lock(&guard).map_err(|e| io_error(name, "cannot lock", e))? {
                sys::Lock::Held | sys::Lock::Unsupported => break,
                sys::Lock::Busy if start.elapsed() > LOCK_WAIT => {
                    return Err(ErrorKind::Locked.at(Location::new(name, 1, 1)))
                }
                sys::Lock::Busy => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        // The previous holder of the lock may have renamed a new file into place.
        let same = fs::symlink_metadata(&file.real).is_ok_and(|now| sys::identity(&now) == sys::identity(&meta));
        if same {
            return Ok((guard, meta));
        }
        if start.elapsed() > LOCK_WAIT {
            return Err(changed(name));
        }
    }
}

/// A new temp file in `folder` holding `bytes`, with the owner, group, mode and extended
/// attributes of `like`.
fn stage(folder: &Path, (like_file, like): (&File, &Metadata), bytes: &[u8]) -> io::Result<NamedTempFile> {
    let prefix = format!("{TEMP_PREFIX}{}-", std::process::id());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(TEMP_SUFFIX).rand_bytes(TEMP_RANDOM);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o600));
    }
    // O_CREAT|O_EXCL: a planted file or link of that name makes creation fail, never followed.
    let mut temp = builder.tempfile_in(folder)?;
    // Owner first: changing the owner clears set-id bits, the mode then sets what it should be.
    let owner_kept = sys::copy_owner(temp.as_file(), like);
    sys::copy_mode(temp.as_file(), like, owner_kept)?;
    sys::copy_xattrs(like_file, temp.as_file());
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    Ok(temp)
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
fn remove_stale(folder: &Path) {
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name.to_str().and_then(temp_pid) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if meta.file_type().is_file() && sys::owned_by_me(&meta) && old && !sys::alive(pid) {
            // unlink never follows a link: at worst it removes a name swapped in meanwhile.
            let _ = fs::remove_file(&path);
        }
    }
}

fn folder(file: &DiskFile) -> &Path {
    file.real
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
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
