//! The kernel's symbols as another reader sees them: a small Python script
//! that reads a `/proc/kallsyms`-format file and bisects it, the oracle for
//! profbridge's own kallsyms reader.

use std::path::Path;
use std::process::Command;

use crate::{require_tool, say_loudly};

/// An address, and the kernel function at it as the oracle names it:
/// (name, module) or `None` below every function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelAnswer {
    pub address: u64,
    pub symbol: Option<(String, Option<String>)>,
}

/// Picks `count` addresses among the functions of `kallsyms` (at their
/// first byte, inside them, and one below them all) with `seed`, and says
/// which function each is in: the function (`T`, `t`, `W` or `w`) with the
/// greatest address at or below it, the first listed when several share
/// that address. `None`, after a loud skip, when Python is missing or the
/// file hides its addresses (all 0: kernel.kptr_restrict, or a process
/// without CAP_SYSLOG).
pub fn kallsyms_oracle(
    kallsyms: &Path,
    count: usize,
    seed: u64,
    purpose: &str,
) -> Option<Vec<KernelAnswer>> {
    let python = require_tool("python3", &["--version"], purpose)?;
    let output = Command::new(python)
        .args(["-c", ORACLE_SCRIPT])
        .arg(kallsyms)
        .arg(count.to_string())
        .arg(seed.to_string())
        .output()
        .expect("run python3");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("the script's JSON");
    if answer["hidden"].as_bool() == Some(true) {
        say_loudly(&format!(
            "SKIPPED: {} shows every address as 0 (kernel.kptr_restrict, or no CAP_SYSLOG): \
             no kernel symbols for {purpose}",
            kallsyms.display()
        ));
        return None;
    }
    let answers = answer["answers"]
        .as_array()
        .expect("answers")
        .iter()
        .map(|row| KernelAnswer {
            address: u64::from_str_radix(row[0].as_str().expect("hex address"), 16)
                .expect("hex address"),
            symbol: row[1]
                .as_str()
                .map(|name| (name.to_owned(), row[2].as_str().map(ToOwned::to_owned))),
        })
        .collect();
    Some(answers)
}

const ORACLE_SCRIPT: &str = r#"
import bisect, json, random, sys

path, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
entries = []
any_address = False
with open(path) as f:
    for order, line in enumerate(f):
        parts = line.split()
        if len(parts) < 3:
            continue
        address = int(parts[0], 16)
        any_address = any_address or address != 0
        if parts[1] not in ("T", "t", "W", "w"):
            continue
        module = parts[3][1:-1] if len(parts) > 3 else None
        entries.append((address, order, parts[2], module))
if not any_address:
    json.dump({"hidden": True}, sys.stdout)
    sys.exit(0)
entries.sort()
addresses = [e[0] for e in entries]

def at(address):
    i = bisect.bisect_right(addresses, address)
    if i == 0:
        return None
    first = bisect.bisect_left(addresses, addresses[i - 1])
    return entries[first]

rng = random.Random(seed)
picked = [addresses[0] - 1]
while len(picked) < count:
    e = entries[rng.randrange(len(entries))]
    if rng.random() < 0.3:
        picked.append(e[0])
    else:
        i = bisect.bisect_right(addresses, e[0])
        end = addresses[i] if i < len(addresses) else e[0] + 64
        picked.append(e[0] + rng.randrange(max(end - e[0], 1)))
answers = []
for address in picked:
    e = at(address)
    answers.append(["%x" % address, e[2] if e else None, e[3] if e else None])
json.dump({"answers": answers}, sys.stdout)
"#;
