//! Reading and writing files safely: a file is written only when asked, through a temporary
//! file in the same folder and a rename, keeping its permissions, and never when it changed on
//! disk since it was read.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Location};
use crate::source::SourceFile;

/// A file read from disk, with the bytes it had, to detect changes before writing.
#[derive(Clone, Debug)]
pub struct DiskFile {
    path: PathBuf,
    bytes: Vec<u8>,
    source: SourceFile,
}

impl DiskFile {
    /// Reads `path` (the path's text is the file name in messages).
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be read, [`Error::NotUtf8`] when it is not UTF-8.
    pub fn read(path: &Path) -> Result<DiskFile, Error> {
        let name = path.display().to_string();
        let bytes = fs::read(path).map_err(|source| io_error(&name, "cannot read", source))?;
        let source = SourceFile::from_bytes(name, bytes.clone())?;
        Ok(DiskFile {
            path: path.to_path_buf(),
            bytes,
            source,
        })
    }

    /// The path read.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The text read.
    #[must_use]
    pub fn source(&self) -> &SourceFile {
        &self.source
    }

    /// Replaces the file's content by `text`, atomically, keeping its permissions.
    ///
    /// # Errors
    /// [`Error::Changed`] when the file on disk no longer holds the bytes read (nothing is
    /// written); [`Error::Io`] when writing or renaming fails (the original stays intact).
    pub fn write(&self, text: &str) -> Result<(), Error> {
        let name = self.source.name();
        let now = fs::read(&self.path).map_err(|source| io_error(name, "cannot read again", source))?;
        if now != self.bytes {
            return Err(Error::Changed {
                location: Location::new(name, 1, 1),
            });
        }
        let folder = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let file_name = self
            .path
            .file_name()
            .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
        let temp = folder.join(format!(".{file_name}.pysplice-{}.tmp", std::process::id()));
        let result = (|| {
            let permissions = fs::metadata(&self.path)?.permissions();
            let mut out = fs::File::create(&temp)?;
            out.write_all(text.as_bytes())?;
            out.sync_all()?;
            fs::set_permissions(&temp, permissions)?;
            fs::rename(&temp, &self.path)
        })();
        result.map_err(|source| {
            let _ = fs::remove_file(&temp);
            io_error(name, "cannot write", source)
        })
    }
}

fn io_error(name: &str, action: &str, source: std::io::Error) -> Error {
    Error::Io {
        location: Location::new(name, 1, 1),
        action: action.to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_atomically_and_refuses_changed_files() {
        let dir = std::env::temp_dir().join(format!("pysplice-files-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.py");
        fs::write(&path, "x = 1\n").unwrap();
        let file = DiskFile::read(&path).unwrap();
        file.write("x = 2\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 2\n");
        let err = file.write("x = 3\n").unwrap_err();
        assert!(matches!(err, Error::Changed { .. }), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 2\n");
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary file is left behind"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
