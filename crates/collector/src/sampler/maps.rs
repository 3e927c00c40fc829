//! The executable mappings of this process, from /proc/self/maps: which
//! file each sampled address lies in.

/// One executable mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedFile {
    pub start: u64,
    pub limit: u64,
    pub file_offset: u64,
    /// The file, or a name like `[vdso]`.
    pub path: String,
}

/// The executable mappings of this process; none where /proc cannot be
/// read (the profile then has no mappings, only names).
pub fn executable_mappings() -> Vec<MappedFile> {
    std::fs::read_to_string("/proc/self/maps")
        .map(|maps| parse(&maps))
        .unwrap_or_default()
}

/// The executable, named lines of a `/proc/PID/maps` text, like
/// `55d0c0a00000-55d0c0b00000 r-xp 00001000 fd:01 1234  /usr/bin/profbridge`.
pub fn parse(maps: &str) -> Vec<MappedFile> {
    maps.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<MappedFile> {
    let mut fields = line.splitn(6, ' ');
    let (start, limit) = fields.next()?.split_once('-')?;
    let permissions = fields.next()?;
    let offset = fields.next()?;
    let path = fields.nth(2)?.trim();
    if !permissions.contains('x') || path.is_empty() {
        return None;
    }
    Some(MappedFile {
        start: u64::from_str_radix(start, 16).ok()?,
        limit: u64::from_str_radix(limit, 16).ok()?,
        file_offset: u64::from_str_radix(offset, 16).ok()?,
        path: path.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executable_named_mappings_only() {
        let maps = "\
55d0c0a00000-55d0c0b00000 r--p 00000000 fd:01 1234                       /usr/bin/profbridge
55d0c0b00000-55d0c0f00000 r-xp 00100000 fd:01 1234                       /usr/bin/profbridge
7f1e2c000000-7f1e2c021000 rw-p 00000000 00:00 0 
7f1e2d000000-7f1e2d180000 r-xp 00026000 fd:01 99                         /usr/lib/x86_64-linux-gnu/libc.so.6
7ffd5a1f0000-7ffd5a1f2000 r-xp 00000000 00:00 0                          [vdso]
";
        let files = parse(maps);
        let paths: Vec<_> = files.iter().map(|file| file.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/usr/bin/profbridge",
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
                "[vdso]"
            ]
        );
        assert_eq!(
            files.first(),
            Some(&MappedFile {
                start: 0x55d0_c0b0_0000,
                limit: 0x55d0_c0f0_0000,
                file_offset: 0x10_0000,
                path: "/usr/bin/profbridge".to_owned(),
            })
        );
    }

    #[test]
    fn this_process_maps_its_own_code() {
        let here = executable_mappings as *const () as usize as u64;
        assert!(
            executable_mappings()
                .iter()
                .any(|file| file.start <= here && here < file.limit),
            "no executable mapping holds {here:#x}"
        );
    }
}
