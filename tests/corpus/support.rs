//! Where the corpora live and what they hold.

pub(crate) use pysplice_test_support::{evenly, models_dir, pinned_versions, python_files};
