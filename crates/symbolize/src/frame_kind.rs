//! What a location's code is (native, kernel, interpreted), and where a
//! kernel location's address is in the kernel.

use profbridge_translate::keys::FRAME_TYPE;

use crate::dictionary::Editor;
use crate::error::MissReason;
use crate::kallsyms::Kallsyms;

/// What a location's code is, as symbolization sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// No `profile.frame.type`, or `native`: code in an ELF file.
    Native,
    /// `profile.frame.type` `kernel`, or a mapping perf names
    /// `[kernel.kallsyms]` (`[kernel.kallsyms]_text` in perf_to_profile's
    /// pprofs).
    Kernel,
    /// Any other frame type: Python, JVM, ...
    Interpreted,
}

/// The file name perf gives the kernel's mapping, with a suffix at times.
const PERF_KERNEL_MAPPING: &str = "[kernel.kallsyms]";

/// The file name the eBPF profiler gives the kernel's own mapping; its
/// modules' mappings are named after them.
const EBPF_KERNEL_MAPPING: &str = "vmlinux";

pub(crate) fn kind_of(
    editor: &Editor<'_>,
    attribute_indices: &[i32],
    mapping_index: usize,
) -> Kind {
    let frame_type = attribute_indices
        .iter()
        .find_map(|&i| match editor.attribute(i) {
            Some((key, value)) if key == FRAME_TYPE => Some(value),
            _ => None,
        });
    match frame_type {
        Some(Some("kernel")) => Kind::Kernel,
        Some(Some(other)) if other != "native" => Kind::Interpreted,
        _ => {
            let mapping = (mapping_index != 0)
                .then(|| editor.dictionary.mapping_table.get(mapping_index))
                .flatten();
            match mapping {
                Some(m)
                    if editor
                        .text(m.filename_strindex)
                        .starts_with(PERF_KERNEL_MAPPING) =>
                {
                    Kind::Kernel
                }
                _ => Kind::Native,
            }
        }
    }
}

/// The kernel address of a kernel location: as it is without a mapping,
/// in perf's `[kernel.kallsyms]` mapping and in mappings that say where
/// they were; counted from the kernel's first text symbol in the eBPF
/// profiler's `vmlinux` mapping (start and limit 0).
pub(crate) fn kernel_address(
    editor: &Editor<'_>,
    mapping_index: usize,
    address: u64,
    symbols: &Kallsyms,
) -> Result<u64, MissReason> {
    let mapping = (mapping_index != 0)
        .then(|| editor.dictionary.mapping_table.get(mapping_index))
        .flatten();
    let Some(mapping) = mapping else {
        return Ok(address);
    };
    let name = editor.text(mapping.filename_strindex);
    if name.is_empty()
        || name.starts_with(PERF_KERNEL_MAPPING)
        || mapping.memory_start != 0
        || mapping.memory_limit != 0
    {
        return Ok(address);
    }
    if name != EBPF_KERNEL_MAPPING {
        return Err(MissReason::KernelModuleRelative);
    }
    symbols
        .kernel_start()
        .and_then(|start| start.checked_add(address))
        .ok_or(MissReason::NoSymbol)
}
