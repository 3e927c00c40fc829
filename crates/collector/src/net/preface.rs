//! Whether a gRPC client has greeted: the HTTP/2 connection preface
//! (24 bytes) and the frame after it, which RFC 9113 §3.4 requires to be
//! SETTINGS, read whole.

/// The preface's length.
const PREFACE_LENGTH: usize = 24;
/// A frame header: 24-bit length, type, flags, stream id.
const FRAME_HEADER_LENGTH: usize = 9;

/// Follows the first bytes a connection sends.
#[derive(Debug, Default)]
pub struct PrefaceProgress {
    read: usize,
    /// The first frame's header, as far as it has arrived.
    header: [u8; FRAME_HEADER_LENGTH],
}

impl PrefaceProgress {
    /// Takes the next bytes read; true once the preface and the first
    /// frame are complete.
    pub fn read(&mut self, bytes: &[u8]) -> bool {
        for &byte in bytes {
            if let Some(at) = self.read.checked_sub(PREFACE_LENGTH) {
                if let Some(slot) = self.header.get_mut(at) {
                    *slot = byte;
                }
            }
            self.read = self.read.saturating_add(1);
            if self.complete() {
                return true;
            }
        }
        self.complete()
    }

    fn complete(&self) -> bool {
        let Some(header_read) = self.read.checked_sub(PREFACE_LENGTH) else {
            return false;
        };
        if header_read < FRAME_HEADER_LENGTH {
            return false;
        }
        let [a, b, c, ..] = self.header;
        let payload = usize::from(a) << 16 | usize::from(b) << 8 | usize::from(c);
        header_read - FRAME_HEADER_LENGTH >= payload
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    #[test]
    fn the_preface_and_settings_complete_the_greeting_in_any_pieces() {
        // SETTINGS with one setting (6 bytes): MAX_CONCURRENT_STREAMS 100.
        let mut greeting = PREFACE.to_vec();
        greeting.extend_from_slice(&[0, 0, 6, 4, 0, 0, 0, 0, 0]);
        greeting.extend_from_slice(&[0, 3, 0, 0, 0, 100]);
        for split in 0..greeting.len() {
            let mut progress = PrefaceProgress::default();
            let (first, rest) = greeting.split_at(split);
            assert!(!progress.read(first) || split == greeting.len());
            assert!(progress.read(rest), "split at {split}");
        }
        let mut short = PrefaceProgress::default();
        assert!(!short.read(&greeting[..greeting.len() - 1]));
    }

    #[test]
    fn an_empty_settings_frame_completes_it_too() {
        let mut progress = PrefaceProgress::default();
        assert!(!progress.read(PREFACE));
        assert!(progress.read(&[0, 0, 0, 4, 0, 0, 0, 0, 0]));
    }
}
