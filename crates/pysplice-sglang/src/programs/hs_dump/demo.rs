//! The bundled demo model, copied where the run may patch it.

use std::path::PathBuf;

/// The demo model: a stand-in written for pysplice in the shape of SGLang's `deepseek_v2.py`.
pub const DEMO_MODEL: &str = include_str!("../../../data/demo_model.py");

/// Writes the demo model into a fresh private temporary folder (created exclusively, mode 0700):
/// the folder, removed when it is dropped, and the copy's path.
pub fn demo_copy() -> Result<(tempfile::TempDir, PathBuf), String> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("sglang-hs-dump-demo-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // tempfile creates folders with 0777 less the umask unless told otherwise.
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    let dir = builder
        .tempdir()
        .map_err(|err| format!("cannot create a temporary folder for the demo copy: {err}"))?;
    let file = dir.path().join("deepseek_v2.py");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&file)
        .and_then(|mut out| std::io::Write::write_all(&mut out, DEMO_MODEL.as_bytes()))
        .map_err(|err| format!("{}: cannot write the demo copy: {err}", file.display()))?;
    Ok((dir, file))
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_copy_is_in_a_private_folder_removed_with_its_guard() {
        let (dir, file) = super::demo_copy().unwrap();
        let folder = dir.path().to_path_buf();
        assert_eq!(file.parent(), Some(folder.as_path()));
        let mode = std::fs::metadata(&folder).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o700);
        assert!(std::fs::read_to_string(&file)
            .unwrap()
            .contains("class DeepseekV2Model"));
        drop(dir);
        assert!(!folder.exists());
    }
}
