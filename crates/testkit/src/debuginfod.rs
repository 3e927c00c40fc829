//! Debian's `debuginfod` (elfutils) serving a folder on loopback, for the
//! symbolizer's tests.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::native::{split_debug_info, NativePrograms};

/// `debuginfod -F` over a folder, stopped when dropped.
pub struct DebuginfodServer {
    child: Child,
    pub url: String,
    pub log: PathBuf,
}

impl DebuginfodServer {
    /// Starts a server over `work/served` holding `programs`' PIE program
    /// stripped, with its debug file apart (so `/executable` has no DWARF
    /// and `/debuginfo` is asked for too), and their library whole.
    pub fn serving_programs(programs: &NativePrograms, work: &Path) -> Self {
        let served = work.join("served");
        split_debug_info(
            &programs.pie,
            &served.join("program"),
            &served.join("program.debug"),
        );
        std::fs::copy(&programs.library, served.join("library.so")).expect("copy the library");
        Self::start(&served, work)
    }

    /// Starts `debuginfod -F` over `served`, its database and log in `work`.
    pub fn start(served: &Path, work: &Path) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = work.join("debuginfod.log");
        let child = Command::new("debuginfod")
            .arg("-F")
            .arg("-d")
            .arg(work.join("debuginfod.sqlite"))
            .args(["-p", &port.to_string()])
            .arg(served)
            .env_remove("DEBUGINFOD_URLS")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start debuginfod");
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        }
    }

    /// Waits until the server answers 200 for each build id's executable:
    /// it has indexed the folder.
    pub fn wait_for(&self, build_ids: &[String]) {
        let address = self.url.trim_start_matches("http://").to_owned();
        for id in build_ids {
            let mut tries = 0;
            while status_of(&address, &format!("/buildid/{id}/executable")) != Some(200) {
                tries += 1;
                assert!(
                    tries < 6000,
                    "debuginfod did not index {id}; its log:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl Drop for DebuginfodServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The status of a GET, or `None` when the server does not answer yet.
pub fn status_of(address: &str, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(address).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").ok()?;
    let mut head = [0u8; 16];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}
