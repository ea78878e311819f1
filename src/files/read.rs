//! Reading: regular files only, up to a size limit, both checked on the open handle before a byte
//! is read, so that a FIFO never blocks and `/dev/zero` is never read.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::folder::Folder;
use super::{io_error, sys};
use crate::error::{Error, ErrorKind};
use crate::location::Location;
use crate::source::SourceFile;

pub(crate) use crate::limits::MAX_FILE_BYTES;

/// Reads the regular file at `path` (a symbolic link is followed), refusing anything else and
/// anything over [`MAX_FILE_BYTES`] before reading. Every reader of pysplice goes through here:
/// Python files, recipes, editor configuration.
///
/// # Errors
/// [`ErrorKind::NotRegular`] for a directory, FIFO, device or socket; [`ErrorKind::TooLarge`] over the
/// limit; [`ErrorKind::Io`] when it cannot be opened or read.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, Error> {
    let name = path.display().to_string();
    let (mut file, _) = open_regular(path, &name)?;
    read_handle(&mut file, &name)
}

/// [`read_bytes`], then UTF-8.
///
/// # Errors
/// Those of [`read_bytes`]; [`ErrorKind::NotUtf8`] naming the line and column of the first bad byte.
pub fn read_text(path: &Path) -> Result<String, Error> {
    let bytes = read_bytes(path)?;
    let name = path.display().to_string();
    SourceFile::from_bytes(name, bytes).map(|source| source.text().to_string())
}

/// Opens `path` for reading, following a final symbolic link, and checks, on the handle, that it
/// is a regular file within the size limit. A look at the path first gives the same answer without
/// opening a device at all (opening some devices has effects); the handle's answer is the one that
/// counts.
pub(crate) fn open_regular(path: &Path, name: &str) -> Result<(File, Metadata), Error> {
    check(
        &std::fs::metadata(path).map_err(|source| io_error(name, "cannot read", source))?,
        name,
    )?;
    let file = sys::open_read(path, true).map_err(|source| io_error(name, "cannot open", source))?;
    let meta = file
        .metadata()
        .map_err(|source| io_error(name, "cannot read", source))?;
    check(&meta, name)?;
    Ok((file, meta))
}

/// [`open_regular`] for `file_name` in `folder`, never through a link; `lock`: opened to be
/// locked (see [`Folder::open_to_lock`]).
pub(crate) fn open_in(folder: &Folder, file_name: &OsStr, name: &str, lock: bool) -> Result<(File, Metadata), Error> {
    let entry = folder
        .entry(file_name)
        .map_err(|source| io_error(name, "cannot read", source))?;
    if let Some(kind) = entry.kind {
        return Err(not_regular(name, kind));
    }
    if entry.len > MAX_FILE_BYTES {
        return Err(too_large(name, entry.len));
    }
    let file = if lock {
        folder.open_to_lock(file_name)
    } else {
        folder.open_read(file_name)
    };
    let file = file.map_err(|source| io_error(name, "cannot open", source))?;
    let meta = file
        .metadata()
        .map_err(|source| io_error(name, "cannot read", source))?;
    check(&meta, name)?;
    Ok((file, meta))
}

/// Refuses what is not a regular file, or is too large.
pub(crate) fn check(meta: &Metadata, name: &str) -> Result<(), Error> {
    if let Some(kind) = sys::kind(meta) {
        return Err(not_regular(name, kind));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(name, meta.len()));
    }
    Ok(())
}

/// The whole content of an open regular file, from its start, never more than the limit (the file
/// may grow after it was checked).
pub(crate) fn read_handle(file: &mut File, name: &str) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|source| io_error(name, "cannot read", source))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(name, bytes.len() as u64));
    }
    Ok(bytes)
}

fn not_regular(name: &str, kind: &str) -> Error {
    ErrorKind::NotRegular { what: kind.to_string() }.at(Location::new(name, 1, 1))
}

fn too_large(name: &str, size: u64) -> Error {
    ErrorKind::TooLarge {
        size,
        limit: MAX_FILE_BYTES,
    }
    .at(Location::new(name, 1, 1))
}
