//! Clean-up after a crash, when the exporter starts: a process killed
//! while writing leaves hidden temporary files, and a JSON line cut short
//! by the kill would glue itself to the next line appended, losing both.
//!
//! Temporary files are named `.profbridge-PID-N.tmp`. At start the
//! exporter has written none yet, so its own PID's are stale (a container
//! restarts as the same PID), and so are those of PIDs that no longer run
//! in this PID namespace. An exporter's directory belongs to one collector:
//! another one writing there, from another container, would lose its
//! temporary files (its writes fail and are retried).
//!
//! A JSON lines file that does not end with a newline ends in a cut line:
//! the file is cut back to its last newline. It is taken for JSON lines
//! only when its first line is a whole JSON value and its tail is not, so
//! a pretty-printed JSON file someone left there is not touched. The cut
//! line's request was never acknowledged by the write, so the sending
//! queue still holds it (on disk, with `storage`) and writes it again.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::retention::list_files;
use super::write::TEMP_PREFIX;

/// What a start-up clean-up did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Recovered {
    pub temp_files_removed: usize,
    pub lines_cut: usize,
}

/// Removes stale temporary files under `root` and, for JSON lines output,
/// cuts files back to their last whole line. Entries that cannot be read
/// or changed are logged and skipped.
pub fn recover(root: &Path, json_lines: bool) -> io::Result<Recovered> {
    let listing = list_files(root)?;
    let mut recovered = Recovered::default();
    for (_, path) in &listing.temp_files {
        if is_stale_temp(path) && fs::remove_file(path).is_ok() {
            recovered.temp_files_removed += 1;
        }
    }
    if json_lines {
        for (_, path) in &listing.files {
            match cut_partial_line(path) {
                Ok(true) => recovered.lines_cut += 1,
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "file exporter could not check a JSON lines file for a cut line");
                }
            }
        }
    }
    Ok(recovered)
}

fn is_stale_temp(path: &Path) -> bool {
    let Some(pid) = path
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_prefix(TEMP_PREFIX))
        .and_then(|rest| rest.split_once('-'))
        .and_then(|(pid, _)| pid.parse::<u32>().ok())
    else {
        return false;
    };
    pid == std::process::id() || !process_is_running(pid)
}

#[cfg(target_os = "linux")]
fn process_is_running(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Without /proc there is no cheap check: only the file's age (retention
/// removes old temporary files) tells.
#[cfg(not(target_os = "linux"))]
fn process_is_running(_pid: u32) -> bool {
    true
}

/// How far back a cut line is looked for at a time.
const CHUNK: u64 = 64 << 10;

/// Cuts a JSON lines file back to just after its last newline when it
/// does not end with one and what follows that newline is not a whole
/// JSON value; true when it did. Files that do not start with `{`, or
/// whose first line is not a whole JSON value, are not JSON lines and are
/// never changed.
pub fn cut_partial_line(path: &Path) -> io::Result<bool> {
    let mut file = OpenOptions::new().read(true).write(true).open(path)?;
    let length = file.metadata()?.len();
    if length == 0 {
        return Ok(false);
    }
    let mut first = [0u8; 1];
    file.read_exact(&mut first)?;
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(length - 1))?;
    file.read_exact(&mut last)?;
    if first != *b"{" || last == *b"\n" {
        return Ok(false);
    }
    let mut end = length;
    let mut buffer = Vec::new();
    let keep = loop {
        if end == 0 {
            break 0;
        }
        let start = end.saturating_sub(CHUNK);
        buffer.resize(usize::try_from(end - start).unwrap_or(0), 0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buffer)?;
        if let Some(newline) = buffer.iter().rposition(|&byte| byte == b'\n') {
            break start + newline as u64 + 1;
        }
        end = start;
    };
    // A whole value after the last newline was not cut short.
    if is_json_value(&mut file, keep, length)? {
        return Ok(false);
    }
    if keep > 0 {
        let first_line = first_line_end(&mut file, keep)?;
        if !is_json_value(&mut file, 0, first_line)? {
            return Ok(false);
        }
    }
    file.set_len(keep)?;
    Ok(true)
}

/// Whether bytes `start..end` of the file are one whole JSON value, read
/// as a stream (a line may be many megabytes).
fn is_json_value(file: &mut std::fs::File, start: u64, end: u64) -> io::Result<bool> {
    file.seek(SeekFrom::Start(start))?;
    let reader = io::BufReader::new(Read::by_ref(file).take(end.saturating_sub(start)));
    Ok(serde_json::from_reader::<_, serde::de::IgnoredAny>(reader).is_ok())
}

/// Where the first line ends (its newline's offset), at most `limit`.
fn first_line_end(file: &mut std::fs::File, limit: u64) -> io::Result<u64> {
    file.seek(SeekFrom::Start(0))?;
    let mut buffer = vec![0u8; CHUNK as usize];
    let mut offset = 0u64;
    while offset < limit {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        if let Some(newline) = buffer.iter().take(read).position(|&byte| byte == b'\n') {
            return Ok((offset + newline as u64).min(limit));
        }
        offset += read as u64;
    }
    Ok(limit)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    fn temp_dir(label: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("profbridge-recover-{label}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_cut_line_is_removed_and_whole_lines_stay() {
        let dir = temp_dir("cut");
        let path = dir.join("a.jsonl");
        let long_line = format!("{{\"x\":\"{}\"}}\n", "y".repeat(200_000));
        fs::write(&path, format!("{{\"a\":1}}\n{long_line}{{\"cut\":\"half")).unwrap();
        assert!(cut_partial_line(&path).unwrap());
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{{\"a\":1}}\n{long_line}")
        );
        assert!(!cut_partial_line(&path).unwrap());

        // A cut first line leaves an empty file.
        fs::write(&path, "{\"cut\":".repeat(30_000)).unwrap();
        assert!(cut_partial_line(&path).unwrap());
        assert_eq!(fs::metadata(&path).unwrap().len(), 0);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pretty_printed_json_and_whole_unterminated_lines_are_left_alone() {
        let dir = temp_dir("pretty");
        let pretty = dir.join("settings.json");
        fs::write(&pretty, "{\n  \"a\": 1,\n  \"b\": [1, 2]\n}").unwrap();
        let whole = dir.join("one.jsonl");
        fs::write(&whole, "{\"a\":1}\n{\"b\":2}").unwrap();
        for path in [&pretty, &whole] {
            let before = fs::read(path).unwrap();
            assert!(!cut_partial_line(path).unwrap(), "{path:?}");
            assert_eq!(fs::read(path).unwrap(), before);
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn files_that_are_not_json_lines_are_left_alone() {
        let dir = temp_dir("other");
        let path = dir.join("cpu.pb.gz");
        fs::write(&path, [0x1f, 0x8b, 8, 0, b'\n', 1, 2, 3]).unwrap();
        assert!(!cut_partial_line(&path).unwrap());
        assert_eq!(fs::metadata(&path).unwrap().len(), 8);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temporary_files_of_dead_processes_and_of_this_one_are_removed() {
        let dir = temp_dir("temp");
        let nested = dir.join("svc");
        fs::create_dir_all(&nested).unwrap();
        let own = nested.join(format!("{TEMP_PREFIX}{}-3.tmp", std::process::id()));
        // PID 1 runs on every Linux system; u32::MAX - 1 is above pid_max.
        let live = nested.join(format!("{TEMP_PREFIX}1-0.tmp"));
        let dead = dir.join(format!("{TEMP_PREFIX}{}-0.tmp", u32::MAX - 1));
        for path in [&own, &live, &dead] {
            fs::write(path, b"partial").unwrap();
        }
        let recovered = recover(&dir, false).unwrap();
        assert_eq!(recovered.temp_files_removed, 2);
        assert!(!own.exists() && !dead.exists());
        assert_eq!(live.exists(), std::process::id() != 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
