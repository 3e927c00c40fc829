//! Writing files so that readers never see half of one: whole files are
//! written to a temporary name and renamed into place; JSON lines are
//! appended in one write and cut back if that write fails.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Temporary files start with this, so that a dot hides them and retention
/// skips them.
pub const TEMP_PREFIX: &str = ".profbridge-";

/// Numbers temporary files; shared by all exporters of the process, so two
/// exporters writing to one directory never pick the same temporary name.
static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

#[derive(Debug)]
pub struct FileWriter {
    fsync: bool,
}

impl FileWriter {
    pub fn new(fsync: bool) -> Self {
        Self { fsync }
    }

    /// Writes `bytes` to `path` through a temporary file in the same
    /// directory (fsynced when configured, with the directory after the
    /// rename), creating missing directories. An existing file is replaced.
    pub fn write_atomically(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let directory = parent_of(path)?;
        fs::create_dir_all(directory)?;
        let temp = directory.join(format!(
            "{TEMP_PREFIX}{}-{}.tmp",
            std::process::id(),
            NEXT_TEMP.fetch_add(1, Ordering::Relaxed)
        ));
        let written = self.write_then_rename(&temp, path, bytes);
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written
    }

    fn write_then_rename(&self, temp: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut file = OpenOptions::new().write(true).create_new(true).open(temp)?;
        file.write_all(bytes)?;
        if self.fsync {
            file.sync_all()?;
        }
        drop(file);
        fs::rename(temp, path)?;
        if self.fsync {
            sync_directory(parent_of(path)?)?;
        }
        Ok(())
    }

    /// Appends `line` and a newline to `path` in one write, creating it
    /// (and its directories) when missing; fsyncs the file when configured.
    /// If the write fails, the file is cut back to where it was, so no
    /// partial line stays. Callers serialize appends to the same file.
    pub fn append_line(&self, path: &Path, line: &[u8]) -> io::Result<()> {
        fs::create_dir_all(parent_of(path)?)?;
        let mut file = OpenOptions::new().create(true).append(true).open(path)?;
        let length_before = file.metadata()?.len();
        let mut record = Vec::with_capacity(line.len() + 1);
        record.extend_from_slice(line);
        record.push(b'\n');
        if let Err(error) = file.write_all(&record) {
            let _ = file.set_len(length_before);
            return Err(error);
        }
        if self.fsync {
            file.sync_data()?;
        }
        Ok(())
    }
}

fn parent_of(path: &Path) -> io::Result<&Path> {
    path.parent().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} has no parent directory", path.display()),
        )
    })
}

/// Makes a rename in `directory` durable.
#[cfg(unix)]
fn sync_directory(directory: &Path) -> io::Result<()> {
    fs::File::open(directory)?.sync_all()
}

#[cfg(not(unix))]
fn sync_directory(_directory: &Path) -> io::Result<()> {
    Ok(())
}
