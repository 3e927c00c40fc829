//! The running kernel's GNU build id, from `/sys/kernel/notes`: the raw
//! ELF notes of the kernel image (header, padded name, padded descriptor,
//! repeated), in the machine's byte order.

use std::path::Path;

const NT_GNU_BUILD_ID: u32 = 3;

/// How much of the notes file is read; the kernel's are a few hundred bytes.
const MAX_NOTES_BYTES: u64 = 1 << 16;

/// The GNU build id in the notes file at `path`; `None` when the file
/// cannot be read or holds none (the kernel's build id is then not checked).
pub(crate) fn kernel_build_id(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut notes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_NOTES_BYTES)
        .read_to_end(&mut notes)
        .ok()?;
    gnu_build_id(&notes)
}

fn gnu_build_id(mut notes: &[u8]) -> Option<Vec<u8>> {
    let word = |bytes: &[u8], at: usize| -> Option<u32> {
        let word: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_ne_bytes(word))
    };
    let padded = |size: u32| usize::try_from(size).ok()?.checked_next_multiple_of(4);
    while notes.len() >= 12 {
        let (name_size, desc_size, kind) = (word(notes, 0)?, word(notes, 4)?, word(notes, 8)?);
        let name_end = 12usize.checked_add(padded(name_size)?)?;
        let desc_end = name_end.checked_add(padded(desc_size)?)?;
        let name = notes.get(12..12 + usize::try_from(name_size).ok()?)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" {
            let desc = notes.get(name_end..name_end + usize::try_from(desc_size).ok()?)?;
            return Some(desc.to_vec());
        }
        notes = notes.get(desc_end..)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for word in [name.len() as u32, desc.len() as u32, kind] {
            bytes.extend(word.to_ne_bytes());
        }
        for part in [name, desc] {
            bytes.extend(part);
            bytes.resize(bytes.len().next_multiple_of(4), 0);
        }
        bytes
    }

    #[test]
    fn the_gnu_build_id_note_is_found_among_others() {
        let id = [0xde, 0xad, 0xbe, 0xef, 0x01];
        let mut notes = note(b"Xen\0", 1, &[1, 2, 3]);
        notes.extend(note(b"GNU\0", 1, &[9; 16]));
        notes.extend(note(b"GNU\0", NT_GNU_BUILD_ID, &id));
        assert_eq!(gnu_build_id(&notes), Some(id.to_vec()));
        assert_eq!(gnu_build_id(&note(b"Linux\0", 3, &id)), None);
        assert_eq!(gnu_build_id(&notes[..notes.len() - 8]), None);
        assert_eq!(gnu_build_id(&[0xff; 12]), None);
    }

    #[test]
    fn this_machine_has_a_kernel_build_id_when_sys_is_mounted() {
        let notes = Path::new("/sys/kernel/notes");
        if notes.exists() {
            let id = kernel_build_id(notes).expect("a GNU build id note");
            assert!(id.len() >= 16, "{id:?}");
        }
    }
}
