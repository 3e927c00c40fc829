//! Writing files so that readers never see half of one: whole files are
//! written to a temporary name and renamed into place; JSON lines are
//! appended in one write and cut back if that write fails.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Temporary files start with this, so that a dot hides them and retention
/// skips them.
pub const TEMP_PREFIX: &str = ".profbridge-";

/// How many taken temporary names [`FileWriter::write_atomically`] skips
/// before it gives up.
const TEMP_NAME_ATTEMPTS: u32 = 1000;

#[derive(Debug)]
pub struct FileWriter {
    fsync: bool,
    /// Numbers this writer's temporary files. Another writer of the process
    /// may count the same numbers in the same directory: a name already
    /// taken is skipped.
    next_temp: AtomicU64,
}

impl FileWriter {
    pub fn new(fsync: bool) -> Self {
        Self {
            fsync,
            next_temp: AtomicU64::new(0),
        }
    }

    /// Writes `bytes` to `path` through a temporary file in the same
    /// directory (fsynced when configured, with the directory after the
    /// rename), creating missing directories. An existing file is replaced.
    pub fn write_atomically(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let directory = parent_of(path)?;
        fs::create_dir_all(directory)?;
        let (temp, file) = self.create_temp(directory)?;
        let written = self.write_then_rename(file, &temp, path, bytes);
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written
    }

    /// A new temporary file in `directory`, `.profbridge-PID-N.tmp`.
    fn create_temp(&self, directory: &Path) -> io::Result<(PathBuf, fs::File)> {
        let mut attempts = 0;
        loop {
            let temp = directory.join(format!(
                "{TEMP_PREFIX}{}-{}.tmp",
                std::process::id(),
                self.next_temp.fetch_add(1, Ordering::Relaxed)
            ));
            match OpenOptions::new().write(true).create_new(true).open(&temp) {
                Ok(file) => return Ok((temp, file)),
                Err(error)
                    if error.kind() == io::ErrorKind::AlreadyExists
                        && attempts < TEMP_NAME_ATTEMPTS =>
                {
                    attempts += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }

    fn write_then_rename(
        &self,
        mut file: fs::File,
        temp: &Path,
        path: &Path,
        bytes: &[u8],
    ) -> io::Result<()> {
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
