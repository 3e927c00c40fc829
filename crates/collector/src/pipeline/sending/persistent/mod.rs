//! The persistent queue's storage: append-only segment files of checked
//! records (see [`record`]), each with an acknowledgement log (see
//! [`ack`]).
//!
//! - `append` writes a record to the active segment and fsyncs it before
//!   returning; a segment is sealed once it reaches its target size, and
//!   a new one is started (the directory is fsynced too).
//! - `ack` marks a record done; a sealed segment whose records are all
//!   acknowledged is deleted, with its log. So is the segment being
//!   written once all its records are done and it holds
//!   [`RECLAIM_ACTIVE_BYTES`] or more: the next append starts a new one.
//! - When an append fails (a full disk) while every record of the segment
//!   being written is done, that segment is deleted and the append tried
//!   once more in a new one, so acknowledged records never hold the disk.
//! - `open` reads every segment: records not acknowledged come back, in
//!   the order they were written. A torn or corrupt tail (a crash during
//!   a write, a damaged disk) is logged and skipped. Writing always goes
//!   to a new segment.
//!
//! A SIGKILL at any point therefore loses nothing that `append` returned;
//! what was exported but not yet acknowledged is exported again.

pub mod ack;
pub mod record;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Segments are sealed once they hold this much (a larger record gets a
/// segment of its own).
pub const DEFAULT_SEGMENT_BYTES: u64 = 8 << 20;

/// A segment being written whose records are all done is deleted once it
/// holds this much; smaller ones are kept, to spare a new file per
/// request when the queue is usually empty.
pub const RECLAIM_ACTIVE_BYTES: u64 = 256 << 10;

const SEGMENT_SUFFIX: &str = ".seg";
const ACK_SUFFIX: &str = ".ack";

/// Where a stored record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef {
    pub segment: u64,
    pub offset: u64,
    /// Its size on disk, header included.
    pub stored: u64,
}

#[derive(Debug)]
pub struct SegmentLog {
    dir: PathBuf,
    segment_bytes: u64,
    state: Mutex<LogState>,
}

#[derive(Debug, Default)]
struct LogState {
    /// Segments holding records not yet acknowledged, or being written.
    segments: BTreeMap<u64, Segment>,
    writer: Option<Writer>,
    next_id: u64,
}

#[derive(Debug, Default)]
struct Segment {
    unacked: BTreeSet<u64>,
    sealed: bool,
}

#[derive(Debug)]
struct Writer {
    id: u64,
    file: File,
    length: u64,
}

impl SegmentLog {
    /// Opens (creating) the queue in `dir`; returns it with the records
    /// waiting from earlier runs, oldest first.
    pub fn open(dir: &Path) -> io::Result<(Self, Vec<RecordRef>)> {
        Self::open_with(dir, DEFAULT_SEGMENT_BYTES)
    }

    pub fn open_with(dir: &Path, segment_bytes: u64) -> io::Result<(Self, Vec<RecordRef>)> {
        fs::create_dir_all(dir)?;
        let mut segment_ids = BTreeSet::new();
        let mut ack_ids = BTreeSet::new();
        for entry in fs::read_dir(dir)? {
            let name = entry?.file_name();
            let name = name.to_string_lossy();
            if let Some(id) = parse_id(&name, SEGMENT_SUFFIX) {
                segment_ids.insert(id);
            } else if let Some(id) = parse_id(&name, ACK_SUFFIX) {
                ack_ids.insert(id);
            }
        }
        let last = segment_ids.iter().chain(&ack_ids).max().copied();
        let mut state = LogState {
            next_id: last.map_or(1, |id| id.saturating_add(1)),
            ..LogState::default()
        };
        let mut pending = Vec::new();
        for &id in &segment_ids {
            let unacked = recover_segment(dir, id)?;
            if unacked.is_empty() {
                delete_segment(dir, id);
                continue;
            }
            pending.extend(unacked.iter().map(|located| RecordRef {
                segment: id,
                offset: located.offset,
                stored: located.stored,
            }));
            state.segments.insert(
                id,
                Segment {
                    unacked: unacked.iter().map(|located| located.offset).collect(),
                    sealed: true,
                },
            );
        }
        for id in ack_ids.difference(&segment_ids) {
            remove_if_present(&dir.join(file_name(*id, ACK_SUFFIX)));
        }
        let log = Self {
            dir: dir.to_path_buf(),
            segment_bytes: segment_bytes.max(1),
            state: Mutex::new(state),
        };
        Ok((log, pending))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn state(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends a framed record and fsyncs it.
    pub fn append(&self, record: &[u8]) -> io::Result<RecordRef> {
        let mut state = self.state();
        match self.append_locked(&mut state, record) {
            Err(_) if self.writer_is_done(&state) => {
                self.seal_writer(&mut state);
                self.append_locked(&mut state, record)
            }
            appended => appended,
        }
    }

    /// Whether a segment is being written and all its records are done.
    fn writer_is_done(&self, state: &LogState) -> bool {
        state.writer.as_ref().is_some_and(|writer| {
            state
                .segments
                .get(&writer.id)
                .is_none_or(|segment| segment.unacked.is_empty())
        })
    }

    fn append_locked(&self, state: &mut LogState, record: &[u8]) -> io::Result<RecordRef> {
        let stored = record.len() as u64;
        let roll = state.writer.as_ref().is_none_or(|writer| {
            writer.length > 0 && writer.length.saturating_add(stored) > self.segment_bytes
        });
        if roll {
            self.seal_writer(state);
            self.start_segment(state)?;
        }
        let Some(writer) = state.writer.as_mut() else {
            return Err(io::Error::other("no segment to write to"));
        };
        let (id, offset) = (writer.id, writer.length);
        if let Err(error) = write_synced(&mut writer.file, record) {
            // Cut the partial record off; if even that fails, the next
            // start finds a torn tail, and writing moves to a new segment.
            if writer.file.set_len(offset).is_err() {
                self.seal_writer(state);
            }
            return Err(error);
        }
        writer.length = offset.saturating_add(stored);
        if let Some(segment) = state.segments.get_mut(&id) {
            segment.unacked.insert(offset);
        }
        Ok(RecordRef {
            segment: id,
            offset,
            stored,
        })
    }

    /// The payload of a stored record, checked; `InvalidData` when the
    /// disk no longer holds what was written.
    pub fn read(&self, at: RecordRef) -> io::Result<Vec<u8>> {
        let mut file = File::open(self.dir.join(file_name(at.segment, SEGMENT_SUFFIX)))?;
        file.seek(SeekFrom::Start(at.offset))?;
        record::read_payload(&mut file, at.stored)
    }

    /// Marks a record done; deletes its segment once every record of it
    /// is done and nothing more will be written to it.
    pub fn ack(&self, at: RecordRef) -> io::Result<()> {
        let mut state = self.state();
        let Some(segment) = state.segments.get_mut(&at.segment) else {
            return Ok(());
        };
        if !segment.unacked.contains(&at.offset) {
            return Ok(());
        }
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(file_name(at.segment, ACK_SUFFIX)))?
            .write_all(&ack::entry(at.offset))?;
        segment.unacked.remove(&at.offset);
        if !segment.unacked.is_empty() {
            return Ok(());
        }
        if segment.sealed {
            state.segments.remove(&at.segment);
            delete_segment(&self.dir, at.segment);
        } else if state
            .writer
            .as_ref()
            .is_some_and(|writer| writer.id == at.segment && writer.length >= RECLAIM_ACTIVE_BYTES)
        {
            self.seal_writer(&mut state);
        }
        Ok(())
    }

    /// Records not yet acknowledged.
    pub fn pending(&self) -> usize {
        self.state()
            .segments
            .values()
            .map(|segment| segment.unacked.len())
            .sum()
    }

    /// Seals the segment being written (deleting it when every record is
    /// done); returns how many records are left for the next start.
    pub fn close(&self) -> usize {
        let mut state = self.state();
        self.seal_writer(&mut state);
        drop(state);
        self.pending()
    }

    fn seal_writer(&self, state: &mut LogState) {
        let Some(writer) = state.writer.take() else {
            return;
        };
        let id = writer.id;
        drop(writer);
        let done = state.segments.get_mut(&id).is_none_or(|segment| {
            segment.sealed = true;
            segment.unacked.is_empty()
        });
        if done {
            state.segments.remove(&id);
            delete_segment(&self.dir, id);
        }
    }

    fn start_segment(&self, state: &mut LogState) -> io::Result<()> {
        let id = state.next_id;
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(self.dir.join(file_name(id, SEGMENT_SUFFIX)))?;
        state.next_id = id.saturating_add(1);
        sync_directory(&self.dir)?;
        state.segments.insert(id, Segment::default());
        state.writer = Some(Writer {
            id,
            file,
            length: 0,
        });
        Ok(())
    }
}

fn write_synced(file: &mut File, record: &[u8]) -> io::Result<()> {
    file.write_all(record)?;
    file.sync_data()
}

/// The records of segment `id` that were never acknowledged.
fn recover_segment(dir: &Path, id: u64) -> io::Result<Vec<record::Located>> {
    let path = dir.join(file_name(id, SEGMENT_SUFFIX));
    let mut file = io::BufReader::new(File::open(&path)?);
    let length = file.get_ref().metadata()?.len();
    let scan = record::scan(&mut file, length)?;
    if let Some((offset, reason)) = &scan.bad_tail {
        tracing::warn!(
            segment = %path.display(),
            offset,
            skipped_bytes = length.saturating_sub(*offset),
            reason = reason.as_str(),
            "persistent queue: skipping the damaged end of a segment"
        );
    }
    let acked = match fs::read(dir.join(file_name(id, ACK_SUFFIX))) {
        Ok(bytes) => {
            let (offsets, ignored) = ack::parse(&bytes);
            if ignored > 0 {
                tracing::warn!(
                    segment = %path.display(),
                    ignored_bytes = ignored,
                    "persistent queue: ignoring damaged acknowledgements (their records are exported again)"
                );
            }
            offsets.into_iter().collect::<BTreeSet<u64>>()
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => BTreeSet::new(),
        Err(error) => return Err(error),
    };
    Ok(scan
        .records
        .into_iter()
        .filter(|located| !acked.contains(&located.offset))
        .collect())
}

fn file_name(id: u64, suffix: &str) -> String {
    format!("{id:020}{suffix}")
}

fn parse_id(name: &str, suffix: &str) -> Option<u64> {
    let digits = name.strip_suffix(suffix)?;
    if digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

/// Removes a segment, then its log: a crash in between leaves a log
/// without a segment, which the next start removes.
fn delete_segment(dir: &Path, id: u64) {
    remove_if_present(&dir.join(file_name(id, SEGMENT_SUFFIX)));
    remove_if_present(&dir.join(file_name(id, ACK_SUFFIX)));
}

fn remove_if_present(path: &Path) {
    match fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => {
            tracing::warn!(file = %path.display(), %error, "persistent queue: cannot remove");
        }
        _ => {}
    }
}

#[cfg(unix)]
fn sync_directory(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_directory(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use profbridge_testkit::TempDir;

    use super::*;

    fn payload(n: u8) -> Vec<u8> {
        vec![n; 20 + usize::from(n)]
    }

    fn framed(n: u8) -> Vec<u8> {
        record::frame(&payload(n)).unwrap()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn read_all(log: &SegmentLog, records: &[RecordRef]) -> Vec<Vec<u8>> {
        records.iter().map(|at| log.read(*at).unwrap()).collect()
    }

    #[test]
    fn unacknowledged_records_come_back_in_order() {
        let dir = TempDir::new("segment-log-replay");
        let (log, pending) = SegmentLog::open(dir.path()).unwrap();
        assert!(pending.is_empty());
        let written: Vec<RecordRef> = (0..5).map(|n| log.append(&framed(n)).unwrap()).collect();
        log.ack(written[1]).unwrap();
        log.ack(written[3]).unwrap();
        log.ack(written[3]).unwrap();
        assert_eq!(log.pending(), 3);
        drop(log);

        let (log, pending) = SegmentLog::open(dir.path()).unwrap();
        assert_eq!(pending, [written[0], written[2], written[4]]);
        assert_eq!(
            read_all(&log, &pending),
            [payload(0), payload(2), payload(4)]
        );
        let next = log.append(&framed(9)).unwrap();
        assert!(next.segment > written[0].segment, "a new segment");
        drop(log);
        let (_, pending) = SegmentLog::open(dir.path()).unwrap();
        assert_eq!(pending.len(), 4);
    }

    #[test]
    fn fully_acknowledged_segments_are_deleted() {
        let dir = TempDir::new("segment-log-delete");
        let (log, _) = SegmentLog::open_with(dir.path(), 1).unwrap();
        let written: Vec<RecordRef> = (0..3).map(|n| log.append(&framed(n)).unwrap()).collect();
        let segments: Vec<u64> = written.iter().map(|at| at.segment).collect();
        assert_eq!(segments, [1, 2, 3], "one record per segment");
        log.ack(written[0]).unwrap();
        assert_eq!(
            names(dir.path()),
            [file_name(2, SEGMENT_SUFFIX), file_name(3, SEGMENT_SUFFIX)]
        );
        log.ack(written[2]).unwrap();
        assert_eq!(
            names(dir.path()),
            [
                file_name(2, SEGMENT_SUFFIX),
                file_name(3, ACK_SUFFIX),
                file_name(3, SEGMENT_SUFFIX)
            ],
            "the segment being written stays"
        );
        log.ack(written[1]).unwrap();
        assert_eq!(log.close(), 0);
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
    }

    #[test]
    fn a_fully_acknowledged_segment_being_written_is_deleted_once_large() {
        let dir = TempDir::new("segment-log-reclaim");
        let (log, _) = SegmentLog::open(dir.path()).unwrap();
        let big = record::frame(&vec![7u8; RECLAIM_ACTIVE_BYTES as usize]).unwrap();
        let small = log.append(&framed(1)).unwrap();
        log.ack(small).unwrap();
        assert_eq!(
            names(dir.path()),
            [file_name(1, ACK_SUFFIX), file_name(1, SEGMENT_SUFFIX)],
            "a small segment being written stays"
        );
        let large = log.append(&big).unwrap();
        assert_eq!(large.segment, 1);
        log.ack(large).unwrap();
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
        let next = log.append(&framed(2)).unwrap();
        assert_eq!(next.segment, 2);
        drop(log);
        let (_, pending) = SegmentLog::open(dir.path()).unwrap();
        assert_eq!(pending, [next]);
    }

    #[test]
    fn a_corrupt_tail_is_skipped_and_its_segment_still_deleted() {
        let dir = TempDir::new("segment-log-corrupt");
        let (log, _) = SegmentLog::open(dir.path()).unwrap();
        let written: Vec<RecordRef> = (0..3).map(|n| log.append(&framed(n)).unwrap()).collect();
        drop(log);
        let path = dir.path().join(file_name(1, SEGMENT_SUFFIX));
        let mut bytes = fs::read(&path).unwrap();
        let last = usize::try_from(written[2].offset).unwrap() + 12;
        bytes[last] ^= 0xff;
        fs::write(&path, &bytes).unwrap();

        let (log, pending) = SegmentLog::open(dir.path()).unwrap();
        assert_eq!(pending, written[..2]);
        for at in pending {
            log.ack(at).unwrap();
        }
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
    }

    #[test]
    fn a_torn_last_record_is_skipped_whatever_byte_it_stops_at() {
        let dir = TempDir::new("segment-log-torn");
        let (first, last) = (framed(1), framed(2));
        for cut in 0..=last.len() {
            let queue = dir.path().join(cut.to_string());
            fs::create_dir_all(&queue).unwrap();
            let mut bytes = first.clone();
            bytes.extend_from_slice(&last[..cut]);
            fs::write(queue.join(file_name(1, SEGMENT_SUFFIX)), &bytes).unwrap();

            let (log, pending) = SegmentLog::open(&queue).unwrap();
            let whole = cut == last.len();
            assert_eq!(pending.len(), if whole { 2 } else { 1 }, "cut at {cut}");
            assert_eq!(
                pending[0],
                RecordRef {
                    segment: 1,
                    offset: 0,
                    stored: first.len() as u64
                }
            );
            assert_eq!(log.read(pending[0]).unwrap(), payload(1));
            let next = log.append(&framed(3)).unwrap();
            assert_eq!(next.segment, 2, "writing goes on in a new segment");
            assert_eq!(log.read(next).unwrap(), payload(3));
        }
    }

    #[test]
    fn damaged_acknowledgements_and_orphan_logs_are_ignored() {
        let dir = TempDir::new("segment-log-acks");
        let mut bytes = framed(1);
        bytes.extend_from_slice(&framed(2));
        fs::write(dir.path().join(file_name(1, SEGMENT_SUFFIX)), &bytes).unwrap();
        let mut acks = ack::entry(3).to_vec();
        let mut damaged = ack::entry(0);
        damaged[9] ^= 1;
        acks.extend_from_slice(&damaged);
        acks.extend_from_slice(&ack::entry(0)[..5]);
        fs::write(dir.path().join(file_name(1, ACK_SUFFIX)), &acks).unwrap();
        fs::write(dir.path().join(file_name(7, ACK_SUFFIX)), ack::entry(0)).unwrap();

        let (log, pending) = SegmentLog::open(dir.path()).unwrap();
        assert_eq!(pending.len(), 2);
        assert!(!dir.path().join(file_name(7, ACK_SUFFIX)).exists());
        assert_eq!(
            log.append(&framed(3)).unwrap().segment,
            8,
            "ids are never reused"
        );
    }

    #[test]
    fn a_record_changed_on_disk_reads_as_invalid_data() {
        let dir = TempDir::new("segment-log-bitrot");
        let (log, _) = SegmentLog::open(dir.path()).unwrap();
        let at = log.append(&framed(4)).unwrap();
        let path = dir.path().join(file_name(at.segment, SEGMENT_SUFFIX));
        let mut bytes = fs::read(&path).unwrap();
        bytes[10] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let error = log.read(at).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    }
}
