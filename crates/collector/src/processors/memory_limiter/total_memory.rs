//! The memory percentages are of: the cgroup's memory limit when the
//! process has one (cgroup v2 `memory.max`, v1 `memory.limit_in_bytes`,
//! the smallest of its group and the groups above it), capped at the
//! machine's physical memory (`MemTotal` in `/proc/meminfo`).

use std::path::{Path, PathBuf};

/// Where the total came from, for the start-up log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TotalMemory {
    pub bytes: u64,
    /// The cgroup file that limits the process, when that is the total.
    pub cgroup_limit: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
#[error(
    "cannot tell the total memory from {path} ({reason}); use limit_mib instead of percentages"
)]
pub struct TotalMemoryError {
    path: PathBuf,
    reason: String,
}

/// cgroup v1 writes a page-rounded `i64::MAX` when there is no limit.
const V1_UNLIMITED_FROM: u64 = 1 << 62;

/// The total memory seen from the file system at `root` (`/` but in
/// tests).
pub fn total_memory(root: &Path) -> Result<TotalMemory, TotalMemoryError> {
    let physical = physical_memory(root)?;
    Ok(match cgroup_limit(root) {
        Some((bytes, file)) if bytes < physical => TotalMemory {
            bytes,
            cgroup_limit: Some(file),
        },
        _ => TotalMemory {
            bytes: physical,
            cgroup_limit: None,
        },
    })
}

fn physical_memory(root: &Path) -> Result<u64, TotalMemoryError> {
    let path = root.join("proc/meminfo");
    let failed = |reason: &str| TotalMemoryError {
        path: path.clone(),
        reason: reason.to_owned(),
    };
    let text = std::fs::read_to_string(&path).map_err(|error| failed(&error.to_string()))?;
    text.lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse::<u64>().ok())
        .map(|kib| kib.saturating_mul(1024))
        .ok_or_else(|| failed("no MemTotal line in kB"))
}

/// The smallest memory limit over the process's cgroup and those above it.
fn cgroup_limit(root: &Path) -> Option<(u64, PathBuf)> {
    let membership = std::fs::read_to_string(root.join("proc/self/cgroup")).unwrap_or_default();
    let mount = root.join("sys/fs/cgroup");
    let (base, own, file) = if mount.join("cgroup.controllers").exists() {
        let own = membership.lines().find_map(|line| line.strip_prefix("0::"));
        (mount, own, "memory.max")
    } else {
        let own = membership.lines().find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let controllers = fields.nth(1)?;
            let path = fields.next()?;
            controllers
                .split(',')
                .any(|controller| controller == "memory")
                .then_some(path)
        });
        (mount.join("memory"), own, "memory.limit_in_bytes")
    };
    ancestry(&base, own.unwrap_or("/"))
        .into_iter()
        .filter_map(|folder| {
            let path = folder.join(file);
            let limit = read_limit(&path)?;
            Some((limit, path))
        })
        .min_by_key(|(limit, _)| *limit)
}

/// `base` joined with `own` (a cgroup path like `/a/b`), then with each of
/// its parents, down to `base` itself.
fn ancestry(base: &Path, own: &str) -> Vec<PathBuf> {
    let mut folders = vec![base.to_path_buf()];
    let mut folder = base.to_path_buf();
    for part in own
        .split('/')
        .filter(|part| !part.is_empty() && *part != "..")
    {
        folder.push(part);
        folders.push(folder.clone());
    }
    folders
}

/// A limit file's bytes; `None` for "max", v1's unlimited, and what
/// cannot be read.
fn read_limit(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let bytes = text.trim().parse::<u64>().ok()?;
    (bytes > 0 && bytes < V1_UNLIMITED_FROM).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use profbridge_testkit::TempDir;

    use super::*;

    const GIB: u64 = 1024 * 1024 * 1024;

    fn machine(meminfo_kib: u64) -> TempDir {
        let root = TempDir::new("total-memory");
        std::fs::create_dir_all(root.path().join("proc/self")).unwrap();
        std::fs::write(
            root.path().join("proc/meminfo"),
            format!("MemTotal:       {meminfo_kib} kB\nMemFree:          1000 kB\n"),
        )
        .unwrap();
        root
    }

    fn write(root: &Path, relative: &str, text: &str) {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn without_a_cgroup_limit_the_total_is_physical_memory() {
        let root = machine(16 * 1024 * 1024);
        write(
            root.path(),
            "sys/fs/cgroup/cgroup.controllers",
            "cpu memory\n",
        );
        write(root.path(), "proc/self/cgroup", "0::/user.slice/app\n");
        write(
            root.path(),
            "sys/fs/cgroup/user.slice/app/memory.max",
            "max\n",
        );
        let total = total_memory(root.path()).unwrap();
        assert_eq!(total.bytes, 16 * GIB);
        assert_eq!(total.cgroup_limit, None);
    }

    #[test]
    fn cgroup_v2_memory_max_of_the_group_or_a_parent_is_the_total() {
        let root = machine(16 * 1024 * 1024);
        write(
            root.path(),
            "sys/fs/cgroup/cgroup.controllers",
            "cpu memory\n",
        );
        write(root.path(), "proc/self/cgroup", "0::/kubepods/pod1/c1\n");
        write(
            root.path(),
            "sys/fs/cgroup/kubepods/pod1/c1/memory.max",
            "max\n",
        );
        write(
            root.path(),
            "sys/fs/cgroup/kubepods/pod1/memory.max",
            &format!("{}\n", 2 * GIB),
        );
        write(
            root.path(),
            "sys/fs/cgroup/kubepods/memory.max",
            &format!("{}\n", 8 * GIB),
        );
        let total = total_memory(root.path()).unwrap();
        assert_eq!(total.bytes, 2 * GIB);
        assert_eq!(
            total.cgroup_limit,
            Some(root.path().join("sys/fs/cgroup/kubepods/pod1/memory.max"))
        );
    }

    #[test]
    fn inside_a_container_the_mounts_root_holds_the_limit() {
        let root = machine(16 * 1024 * 1024);
        write(root.path(), "sys/fs/cgroup/cgroup.controllers", "memory\n");
        write(root.path(), "proc/self/cgroup", "0::/\n");
        write(root.path(), "sys/fs/cgroup/memory.max", "536870912\n");
        assert_eq!(total_memory(root.path()).unwrap().bytes, 512 * 1024 * 1024);
    }

    #[test]
    fn cgroup_v1_limit_in_bytes_counts_unless_it_is_unlimited() {
        let root = machine(4 * 1024 * 1024);
        write(
            root.path(),
            "proc/self/cgroup",
            "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n",
        );
        write(
            root.path(),
            "sys/fs/cgroup/memory/memory.limit_in_bytes",
            "9223372036854771712\n",
        );
        assert_eq!(total_memory(root.path()).unwrap().bytes, 4 * GIB);
        write(
            root.path(),
            "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes",
            &format!("{}\n", GIB),
        );
        assert_eq!(total_memory(root.path()).unwrap().bytes, GIB);
    }

    #[test]
    fn a_cgroup_limit_above_physical_memory_is_capped() {
        let root = machine(1024 * 1024);
        write(root.path(), "sys/fs/cgroup/cgroup.controllers", "memory\n");
        write(root.path(), "proc/self/cgroup", "0::/big\n");
        write(
            root.path(),
            "sys/fs/cgroup/big/memory.max",
            &format!("{}\n", 64 * GIB),
        );
        let total = total_memory(root.path()).unwrap();
        assert_eq!(total.bytes, GIB);
        assert_eq!(total.cgroup_limit, None);
    }

    #[test]
    fn without_meminfo_the_error_says_to_use_limit_mib() {
        let root = TempDir::new("total-memory");
        let error = total_memory(root.path()).unwrap_err().to_string();
        assert!(error.contains("proc/meminfo"), "{error}");
        assert!(error.contains("use limit_mib"), "{error}");
    }
}
