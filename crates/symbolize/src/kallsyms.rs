//! Kernel symbols from a `/proc/kallsyms`-format file: `ADDRESS TYPE NAME`
//! lines, with `[module]` after the name for symbols of loadable modules.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The most bytes read from the file; a kernel with many modules writes a
/// few MiB.
pub const MAX_KALLSYMS_BYTES: u64 = 64 << 20;

/// Why the kernel's symbols cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KallsymsError {
    #[error("{}: cannot read kernel symbols: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: more than {limit} bytes of kernel symbols", path.display())]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{}:{line}: not a kallsyms line (`ADDRESS TYPE NAME [MODULE]`)", path.display())]
    Malformed { path: PathBuf, line: usize },
    #[error(
        "{}: every address is 0: the kernel hides them from this process \
         (kernel.kptr_restrict, or no CAP_SYSLOG)",
        path.display()
    )]
    AddressesHidden { path: PathBuf },
}

/// A function of the kernel or of one of its modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KernelSymbol<'a> {
    pub name: &'a str,
    /// The module, `None` for the kernel itself.
    pub module: Option<&'a str>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    address: u64,
    name_start: u32,
    name_end: u32,
    /// Index in `modules` plus one; 0 for the kernel itself.
    module: u32,
}

/// The text symbols of the kernel and its modules, by address.
#[derive(Debug)]
pub(crate) struct Kallsyms {
    entries: Vec<Entry>,
    names: String,
    modules: Vec<String>,
    /// Where the eBPF profiler's `vmlinux` addresses count from: the first
    /// text symbol of the kernel itself in the file.
    kernel_start: Option<u64>,
}

/// Whether a symbol type (`nm`'s letters) is code: global, local or weak.
fn is_text(kind: &str) -> bool {
    matches!(kind, "T" | "t" | "W" | "w")
}

impl Kallsyms {
    pub fn read(path: &Path) -> Result<Self, KallsymsError> {
        let file = File::open(path).map_err(|source| KallsymsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(file, path)
    }

    /// Parses `reader`; `path` names it in errors.
    pub fn parse(reader: impl Read, path: &Path) -> Result<Self, KallsymsError> {
        Self::parse_at_most(reader, path, MAX_KALLSYMS_BYTES)
    }

    fn parse_at_most(reader: impl Read, path: &Path, limit: u64) -> Result<Self, KallsymsError> {
        let mut reader = BufReader::new(reader.take(limit.saturating_add(1)));
        let mut symbols = Self {
            entries: Vec::new(),
            names: String::new(),
            modules: Vec::new(),
            kernel_start: None,
        };
        let mut line = String::new();
        let mut read_bytes = 0u64;
        let mut any_address = false;
        let mut number = 0;
        loop {
            line.clear();
            let read = reader
                .read_line(&mut line)
                .map_err(|source| KallsymsError::Read {
                    path: path.to_path_buf(),
                    source,
                })?;
            if read == 0 {
                break;
            }
            read_bytes += read as u64;
            if read_bytes > limit {
                return Err(KallsymsError::TooLarge {
                    path: path.to_path_buf(),
                    limit,
                });
            }
            number += 1;
            let malformed = || KallsymsError::Malformed {
                path: path.to_path_buf(),
                line: number,
            };
            let mut fields = line.split_ascii_whitespace();
            let (Some(address), Some(kind), Some(name)) =
                (fields.next(), fields.next(), fields.next())
            else {
                if line.trim().is_empty() {
                    continue;
                }
                return Err(malformed());
            };
            let module = match fields.next() {
                None => None,
                Some(module) => Some(
                    module
                        .strip_prefix('[')
                        .and_then(|m| m.strip_suffix(']'))
                        .filter(|m| !m.is_empty())
                        .ok_or_else(malformed)?,
                ),
            };
            if fields.next().is_some() {
                return Err(malformed());
            }
            let address = u64::from_str_radix(address, 16).map_err(|_| malformed())?;
            any_address |= address != 0;
            if is_text(kind) {
                symbols.add(address, name, module);
            }
        }
        if !any_address {
            return Err(KallsymsError::AddressesHidden {
                path: path.to_path_buf(),
            });
        }
        // Stable: among symbols at one address, the first listed wins.
        symbols.entries.sort_by_key(|entry| entry.address);
        symbols.names.shrink_to_fit();
        symbols.entries.shrink_to_fit();
        Ok(symbols)
    }

    fn add(&mut self, address: u64, name: &str, module: Option<&str>) {
        let module = match module {
            None => {
                self.kernel_start.get_or_insert(address);
                0
            }
            Some(module) => {
                // Modules' symbols come grouped, so the last one is checked
                // first.
                let known = self.modules.iter().rposition(|m| m == module);
                let index = known.unwrap_or_else(|| {
                    self.modules.push(module.to_owned());
                    self.modules.len() - 1
                });
                u32::try_from(index + 1).unwrap_or(u32::MAX)
            }
        };
        let offset = |length: usize| u32::try_from(length).unwrap_or(u32::MAX);
        let name_start = offset(self.names.len());
        self.names.push_str(name);
        self.entries.push(Entry {
            address,
            name_start,
            name_end: offset(self.names.len()),
            module,
        });
    }

    /// The symbol with the greatest address at or below `address`; `None`
    /// below the first one.
    pub fn lookup(&self, address: u64) -> Option<KernelSymbol<'_>> {
        let after = self.entries.partition_point(|e| e.address <= address);
        let last = self.entries.get(after.checked_sub(1)?)?;
        let first_at_address = self.entries.partition_point(|e| e.address < last.address);
        let entry = self.entries.get(first_at_address)?;
        let name = self
            .names
            .get(entry.name_start as usize..entry.name_end as usize)?;
        let module = match entry.module {
            0 => None,
            index => Some(self.modules.get(index as usize - 1)?.as_str()),
        };
        Some(KernelSymbol { name, module })
    }

    /// The address of the kernel's first text symbol, from which the eBPF
    /// profiler counts the addresses of its `vmlinux` mapping.
    pub fn kernel_start(&self) -> Option<u64> {
        self.kernel_start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Kallsyms, KallsymsError> {
        Kallsyms::parse(text.as_bytes(), Path::new("kallsyms"))
    }

    #[test]
    fn addresses_resolve_to_the_greatest_text_symbol_at_or_below_them() {
        let symbols = parse(
            "ffffffff81000000 A fixed_percpu_data\n\
             ffffffff81000000 T _stext\n\
             ffffffff81000000 T _text\n\
             ffffffff81000100 t local_helper\n\
             ffffffff81000200 D some_data\n\
             ffffffff81000300 W weak_function\n\
             ffffffffc0001000 t ext4_readdir\t[ext4]\n\
             ffffffffc0000000 t ext4_init\t[ext4]\n",
        )
        .unwrap();
        let at = |address| symbols.lookup(address).map(|s| (s.name, s.module));
        assert_eq!(at(0xffff_ffff_80ff_ffff), None);
        assert_eq!(at(0xffff_ffff_8100_0000), Some(("_stext", None)));
        assert_eq!(at(0xffff_ffff_8100_00ff), Some(("_stext", None)));
        assert_eq!(at(0xffff_ffff_8100_0100), Some(("local_helper", None)));
        // Data symbols do not end a function.
        assert_eq!(at(0xffff_ffff_8100_0250), Some(("local_helper", None)));
        assert_eq!(at(0xffff_ffff_8100_0300), Some(("weak_function", None)));
        // Module symbols are listed unsorted.
        assert_eq!(at(0xffff_ffff_c000_0010), Some(("ext4_init", Some("ext4"))));
        assert_eq!(
            at(0xffff_ffff_c000_1010),
            Some(("ext4_readdir", Some("ext4")))
        );
        assert_eq!(symbols.kernel_start(), Some(0xffff_ffff_8100_0000));
    }

    #[test]
    fn hidden_addresses_and_bad_lines_are_errors() {
        let hidden = "0000000000000000 T _stext\n0000000000000000 t helper\n";
        assert!(matches!(
            parse(hidden),
            Err(KallsymsError::AddressesHidden { .. })
        ));
        assert!(matches!(
            parse(""),
            Err(KallsymsError::AddressesHidden { .. })
        ));
        for (text, line) in [
            ("ffffffff81000000 T\n", 1),
            ("ffffffff81000000 T a\nzz T b\n", 2),
            ("ffffffff81000000 T a ext4\n", 1),
            ("ffffffff81000000 T a [ext4] more\n", 1),
            ("ffffffff81000000 T a []\n", 1),
        ] {
            match parse(text) {
                Err(KallsymsError::Malformed { line: found, .. }) => assert_eq!(found, line),
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_file_past_the_limit_is_refused() {
        let text = "ffffffff81000000 T f\n".repeat(10);
        let parse = |limit| Kallsyms::parse_at_most(text.as_bytes(), Path::new("big"), limit);
        assert!(matches!(
            parse(text.len() as u64 - 1),
            Err(KallsymsError::TooLarge { limit: 209, .. })
        ));
        assert!(parse(text.len() as u64).is_ok());
    }
}
