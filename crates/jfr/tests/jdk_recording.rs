//! One recording made by the JDK at test time, shared by the tests of
//! this binary: a small program with a spinning thread, an allocating
//! thread, two threads contending for a monitor and a parking thread,
//! recorded with the `profile` settings.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use profbridge_testkit::{require_tool, TempDir};

const PROGRAM: &str = r#"
import java.util.concurrent.locks.LockSupport;

public class Busy {
    static final Object LOCK = new Object();
    static volatile long sink;

    static long spin(long n) {
        long acc = 0;
        for (long i = 0; i < n; i++) { acc += i * 31 ^ (acc >>> 3); }
        return acc;
    }

    static void hold() throws InterruptedException {
        synchronized (LOCK) { Thread.sleep(25); }
    }

    public static void main(String[] args) throws Exception {
        long end = System.nanoTime() + 1_500_000_000L;
        Thread spinner = new Thread(() -> { while (System.nanoTime() < end) sink = spin(1_000_000); }, "spinner");
        Thread allocator = new Thread(() -> {
            while (System.nanoTime() < end) { byte[][] junk = new byte[64][]; for (int i = 0; i < 64; i++) junk[i] = new byte[4096 + i]; sink = junk.length; }
        }, "allocator");
        Runnable contend = () -> {
            try { while (System.nanoTime() < end) hold(); } catch (InterruptedException e) { }
        };
        Thread lockerA = new Thread(contend, "locker-a");
        Thread lockerB = new Thread(contend, "locker-b");
        Thread parker = new Thread(() -> { while (System.nanoTime() < end) LockSupport.parkNanos(30_000_000L); }, "parker");
        for (Thread t : new Thread[] {spinner, allocator, lockerA, lockerB, parker}) t.start();
        for (Thread t : new Thread[] {spinner, allocator, lockerA, lockerB, parker}) t.join();
    }
}
"#;

fn run(command: &mut Command) -> bool {
    match command.output() {
        Ok(out) if out.status.success() => true,
        Ok(out) => panic!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!("{command:?} did not start: {e}"),
    }
}

fn record(dir: &Path) -> Vec<u8> {
    std::fs::write(dir.join("Busy.java"), PROGRAM).expect("write Busy.java");
    run(Command::new("javac")
        .arg("-d")
        .arg(dir)
        .arg(dir.join("Busy.java")));
    let recording = dir.join("busy.jfr");
    // A small heap: the allocating thread would otherwise grow the JVM
    // to a quarter of the machine's memory.
    run(Command::new("java")
        .arg("-Xmx64m")
        .arg(format!(
            "-XX:StartFlightRecording=filename={},settings=profile",
            recording.display()
        ))
        .arg("-cp")
        .arg(dir)
        .arg("Busy"));
    std::fs::read(&recording).expect("read the recording")
}

/// The recording, or `None` (said loudly) when the JDK is missing.
pub fn recording() -> Option<&'static [u8]> {
    static RECORDING: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    RECORDING
        .get_or_init(|| {
            let purpose = "recording a JFR file with the JDK";
            require_tool("javac", &["-version"], purpose)?;
            require_tool("java", &["-version"], purpose)?;
            require_tool("jfr", &["version"], purpose)?;
            let dir = TempDir::new("jfr-recording");
            Some(record(dir.path()))
        })
        .as_deref()
}

/// `jfr print --json` of the recording's events of `types` (comma
/// separated), as the JDK reads them.
pub fn jdk_json(types: &str) -> serde_json::Value {
    let bytes = recording().expect("only called with a recording");
    let dir = TempDir::new("jfr-print");
    let path = dir.path().join("busy.jfr");
    std::fs::write(&path, bytes).expect("write the recording");
    let out = Command::new("jfr")
        .args(["print", "--json", "--stack-depth", "64", "--events", types])
        .arg(&path)
        .output()
        .expect("run jfr print");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("jfr print --json prints JSON")
}
