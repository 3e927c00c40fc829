//! Requests that could not be exported, kept as OTLP protobuf files: one
//! request per file, written to a hidden temporary name, fsynced, then
//! renamed, so a reader never sees half a file. Names hold the exporter,
//! the time, the process id and a counter, and are checked to be unused.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use prost::Message;

use crate::pipeline::Profiles;
use crate::shared::timestamp::utc_timestamp;

pub const SUFFIX: &str = ".otlp.pb";

#[derive(Debug)]
pub struct DeadLetter {
    dir: PathBuf,
    stem: String,
    sequence: AtomicU64,
}

impl DeadLetter {
    /// Creates `dir` when missing.
    pub fn new(dir: &Path, exporter: &str) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            stem: file_stem(exporter),
            sequence: AtomicU64::new(0),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes the batch's request; blocks on file IO.
    pub fn write(&self, batch: &Profiles) -> io::Result<PathBuf> {
        let bytes = batch.request().encode_to_vec();
        let time = utc_timestamp(SystemTime::now());
        let pid = std::process::id();
        loop {
            let seq = self.sequence.fetch_add(1, Ordering::Relaxed);
            let name = format!("{}-{time}-{pid}-{seq:06}", self.stem);
            let path = self.dir.join(format!("{name}{SUFFIX}"));
            if path.exists() {
                continue;
            }
            let temp = self.dir.join(format!(".{name}.tmp"));
            let written = write_then_rename(&temp, &path, &bytes);
            if written.is_err() {
                let _ = fs::remove_file(&temp);
            }
            return written.map(|()| path);
        }
    }
}

fn write_then_rename(temp: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(temp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fs::rename(temp, path)?;
    sync_directory(path.parent().unwrap_or(Path::new(".")))
}

#[cfg(unix)]
fn sync_directory(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_directory(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// An exporter id as a file name: letters, digits, `_`, `-` and `.` stay
/// (but not a leading `.`), anything else becomes `%XX`, so different ids
/// never share a name (`file/json` is `file%2Fjson`).
pub fn file_stem(id: &str) -> String {
    let mut stem = String::with_capacity(id.len());
    for (index, byte) in id.bytes().enumerate() {
        let kept = byte.is_ascii_alphanumeric()
            || matches!(byte, b'_' | b'-')
            || (byte == b'.' && index > 0);
        if kept {
            stem.push(char::from(byte));
        } else {
            stem.push_str(&format!("%{byte:02X}"));
        }
    }
    stem
}

#[cfg(test)]
mod tests {
    use profbridge_testkit::TempDir;
    use profbridge_translate::otlp::ExportProfilesServiceRequest;

    use super::*;

    #[test]
    fn stems_keep_ids_apart_and_inside_the_directory() {
        assert_eq!(file_stem("file"), "file");
        assert_eq!(file_stem("file/json"), "file%2Fjson");
        assert_eq!(file_stem("otlp/a b"), "otlp%2Fa%20b");
        assert_eq!(file_stem("x/.."), "x%2F..");
        assert_eq!(file_stem(".."), "%2E.");
        assert_ne!(file_stem("a/%2F"), file_stem("a/%"));
    }

    #[test]
    fn every_request_gets_its_own_file_that_decodes_back() {
        let dir = TempDir::new("dead-letter");
        let letters = DeadLetter::new(&dir.path().join("dead"), "otlp/x").unwrap();
        let request = profbridge_testkit::ebpf_like_request(3, 2);
        let batch = Profiles::new(request.clone(), request.encoded_len());
        let paths: Vec<PathBuf> = (0..3).map(|_| letters.write(&batch).unwrap()).collect();
        assert_eq!(fs::read_dir(letters.dir()).unwrap().count(), 3);
        for path in &paths {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                name.starts_with("otlp%2Fx-") && name.ends_with(SUFFIX),
                "{name}"
            );
            let back = ExportProfilesServiceRequest::decode(fs::read(path).unwrap().as_slice());
            assert_eq!(back.unwrap(), request);
        }
    }
}
