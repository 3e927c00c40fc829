//! Synthetic gperftools CPU profiles: the binary format libprofiler writes
//! (here 64-bit little-endian), large enough to benchmark legacy parsing.
//!
//! The layout, in 64-bit words:
//!
//! - header: `0, 3, 0, period_us, 0`;
//! - records: `count, n, pc_1 .. pc_n` (leaf first);
//! - trailer: `0, 1, 0`;
//!
//! then the text of the process's `/proc/self/maps`.

use crate::SeededRng;

/// The sampling period the generated profiles declare (100 Hz).
pub const GPERFTOOLS_PERIOD_US: u64 = 10_000;

/// A mapped object: its segments (permissions and size) follow each other
/// from `base`, their file offsets as a loader lays them out.
struct Object {
    path: &'static str,
    inode: u64,
    base: u64,
    segments: &'static [(&'static str, u64)],
    /// Relative share of the random PCs that fall in its executable segment.
    weight: u64,
}

const OBJECTS: &[Object] = &[
    // Text at 0x401000, file offset 0x1000: google/pprof moves such a first
    // mapping's start back to 0x400000.
    Object {
        path: "/usr/bin/app",
        inode: 1_310_724,
        base: 0x40_0000,
        segments: &[
            ("r--p", 0x1000),
            ("r-xp", 0x105_1000),
            ("r--p", 0x5a_e000),
            ("rw-p", 0x4_0000),
        ],
        weight: 60,
    },
    Object {
        path: "/usr/lib/x86_64-linux-gnu/libc.so.6",
        inode: 2_097_171,
        base: 0x7f3a_1c00_0000,
        segments: &[
            ("r--p", 0x2_8000),
            ("r-xp", 0x19_5000),
            ("r--p", 0x5_8000),
            ("rw-p", 0x6000),
        ],
        weight: 20,
    },
    Object {
        path: "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
        inode: 2_097_312,
        base: 0x7f3a_1c40_0000,
        segments: &[
            ("r--p", 0x9_a000),
            ("r-xp", 0x11_1000),
            ("r--p", 0x6_f000),
            ("rw-p", 0xe000),
        ],
        weight: 15,
    },
    Object {
        path: "/usr/lib/x86_64-linux-gnu/libprofiler.so.0.5.5",
        inode: 2_097_400,
        base: 0x7f3a_1c80_0000,
        segments: &[
            ("r--p", 0x5000),
            ("r-xp", 0x7000),
            ("r--p", 0x5000),
            ("rw-p", 0x1000),
        ],
        weight: 4,
    },
    Object {
        path: "[vdso]",
        inode: 0,
        base: 0x7ffd_3c7f_2000,
        segments: &[("r-xp", 0x2000)],
        weight: 1,
    },
];

/// Anonymous mappings listed between the objects, as a real maps file has.
const ANONYMOUS: &[(u64, u64, &str)] = &[
    (0x01a4_0000, 0x01c0_0000, "[heap]"),
    (0x7ffd_3c5e_0000, 0x7ffd_3c60_1000, "[stack]"),
];

/// An executable range: start, limit, weight.
type ExecRange = (u64, u64, u64);

/// The maps text and the executable ranges of [`OBJECTS`].
fn layout() -> (String, Vec<ExecRange>) {
    let mut lines: Vec<(u64, String)> = Vec::new();
    let mut exec = Vec::new();
    for object in OBJECTS {
        let mut start = object.base;
        let mut offset = 0;
        for &(perms, size) in object.segments {
            let (device, inode) = if object.inode == 0 {
                ("00:00", 0)
            } else {
                ("08:01", object.inode)
            };
            lines.push((
                start,
                format!(
                    "{start:08x}-{:08x} {perms} {offset:08x} {device} {inode:<11} {}",
                    start + size,
                    object.path
                ),
            ));
            if perms.contains('x') {
                exec.push((start, start + size, object.weight));
            }
            start += size;
            offset += size;
        }
    }
    for &(start, limit, name) in ANONYMOUS {
        lines.push((
            start,
            format!("{start:08x}-{limit:08x} rw-p 00000000 00:00 0           {name}"),
        ));
    }
    lines.sort_by_key(|(start, _)| *start);
    let mut text = String::new();
    for (_, line) in lines {
        text.push_str(&line);
        text.push('\n');
    }
    (text, exec)
}

fn random_pc(rng: &mut SeededRng, exec: &[ExecRange]) -> u64 {
    let total: u64 = exec.iter().map(|(_, _, weight)| weight).sum();
    let mut pick = rng.next_u64() % total;
    for &(start, limit, weight) in exec {
        if pick < weight {
            return start + rng.next_u64() % (limit - start);
        }
        pick -= weight;
    }
    unreachable!("the weights add up to the total")
}

fn put(out: &mut Vec<u8>, word: u64) {
    out.extend_from_slice(&word.to_le_bytes());
}

/// A valid 64-bit little-endian gperftools CPU profile of `records` stack
/// records, the same bytes for the same `records` and `seed`.
///
/// Each record has a depth of 5 to 40 frames: random PCs drawn from a pool
/// of about `records / 10` distinct PCs in the executable mappings, then the
/// same three outermost frames (`main`, libc's start, `_start`), so nearly
/// every stack is distinct while locations repeat as in a real profile.
/// About a quarter of the records have a count above 1.
pub fn gperftools_cpu_profile(records: usize, seed: u64) -> Vec<u8> {
    let mut rng = SeededRng::new(seed);
    let (maps, exec) = layout();
    let (app_start, _, _) = exec[0];
    let (libc_start, _, _) = exec[1];
    let roots = [app_start + 0x3_f2a4, libc_start + 0x1_d90, app_start + 0x25];
    let pool: Vec<u64> = (0..(records / 10).clamp(64, 1 << 20))
        .map(|_| random_pc(&mut rng, &exec))
        .collect();

    let mut out = Vec::with_capacity(records * 200 + maps.len() + 64);
    for word in [0, 3, 0, GPERFTOOLS_PERIOD_US, 0] {
        put(&mut out, word);
    }
    for _ in 0..records {
        let depth = 5 + rng.below(36);
        let count = if rng.below(4) == 0 {
            2 + rng.below(20)
        } else {
            1
        };
        put(&mut out, count as u64);
        put(&mut out, depth as u64);
        for _ in 0..depth - roots.len() {
            put(&mut out, pool[rng.below(pool.len())]);
        }
        for root in roots {
            put(&mut out, root);
        }
    }
    for word in [0, 1, 0] {
        put(&mut out, word);
    }
    out.extend_from_slice(maps.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(bytes: &[u8], index: usize) -> u64 {
        u64::from_le_bytes(bytes[index * 8..index * 8 + 8].try_into().unwrap())
    }

    #[test]
    fn the_layout_is_header_records_trailer_then_maps() {
        let bytes = gperftools_cpu_profile(100, 7);
        assert_eq!(bytes, gperftools_cpu_profile(100, 7), "deterministic");
        assert_eq!(
            (0..5).map(|i| word(&bytes, i)).collect::<Vec<_>>(),
            [0, 3, 0, GPERFTOOLS_PERIOD_US, 0]
        );
        let (maps, exec) = layout();
        let mut at = 5;
        for _ in 0..100 {
            let (count, depth) = (word(&bytes, at), word(&bytes, at + 1) as usize);
            assert!(count >= 1 && (5..=40).contains(&depth));
            for i in 0..depth {
                let pc = word(&bytes, at + 2 + i);
                assert!(exec
                    .iter()
                    .any(|&(start, limit, _)| (start..limit).contains(&pc)));
            }
            at += 2 + depth;
        }
        assert_eq!(
            [word(&bytes, at), word(&bytes, at + 1), word(&bytes, at + 2)],
            [0, 1, 0]
        );
        assert_eq!(&bytes[(at + 3) * 8..], maps.as_bytes());
        assert!(maps.starts_with(
            "00400000-00401000 r--p 00000000 08:01 1310724     /usr/bin/app\n\
             00401000-01452000 r-xp 00001000 08:01 1310724     /usr/bin/app\n"
        ));
    }
}
