//! A value loaded from files and loaded again when their modification
//! times or sizes change; a failed reload keeps the previous value.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

type Loader<T, E> = Box<dyn Fn() -> Result<T, E> + Send + Sync>;

/// What identifies a file's version cheaply.
type Stamp = Option<(SystemTime, u64)>;

pub(crate) struct Reloading<T, E> {
    what: &'static str,
    paths: Vec<PathBuf>,
    /// `None` never reloads.
    interval: Option<Duration>,
    load: Loader<T, E>,
    state: Mutex<State<T>>,
}

struct State<T> {
    current: Arc<T>,
    stamps: Vec<Stamp>,
    checked: Instant,
}

impl<T, E: std::fmt::Display> Reloading<T, E> {
    /// Loads the value once; an error here is a start-up error.
    pub fn new(
        what: &'static str,
        paths: Vec<PathBuf>,
        interval: Duration,
        load: Loader<T, E>,
    ) -> Result<Self, E> {
        let stamps = stamps(&paths);
        let current = Arc::new(load()?);
        Ok(Self {
            what,
            paths,
            interval: (!interval.is_zero()).then_some(interval),
            load,
            state: Mutex::new(State {
                current,
                stamps,
                checked: Instant::now(),
            }),
        })
    }

    /// The current value, loaded again first if the interval has passed
    /// since the last check and a file changed.
    pub fn current(&self) -> Arc<T> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(interval) = self.interval else {
            return Arc::clone(&state.current);
        };
        if state.checked.elapsed() < interval {
            return Arc::clone(&state.current);
        }
        state.checked = Instant::now();
        let now = stamps(&self.paths);
        if now != state.stamps {
            // Recorded even when loading fails, so that a bad file is
            // reported once, and loaded again when it changes again.
            state.stamps = now;
            match (self.load)() {
                Ok(value) => {
                    state.current = Arc::new(value);
                    tracing::info!(what = self.what, "reloaded changed files");
                }
                Err(error) => {
                    tracing::error!(
                        what = self.what,
                        %error,
                        "cannot reload changed files; keeping the previous ones"
                    );
                }
            }
        }
        Arc::clone(&state.current)
    }
}

fn stamps(paths: &[PathBuf]) -> Vec<Stamp> {
    paths
        .iter()
        .map(|path| {
            let metadata = std::fs::metadata(path).ok()?;
            Some((metadata.modified().ok()?, metadata.len()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn changed_files_are_loaded_again_and_bad_ones_keep_the_old_value() {
        let dir = std::env::temp_dir().join(format!("profbridge-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("value");
        std::fs::write(&path, "1").unwrap();
        let read = path.clone();
        let reloading = Reloading::new(
            "test",
            vec![path.clone()],
            Duration::from_nanos(1),
            Box::new(move || {
                let text = std::fs::read_to_string(&read).map_err(|e| e.to_string())?;
                text.trim().parse::<u32>().map_err(|e| e.to_string())
            }),
        )
        .unwrap();
        assert_eq!(*reloading.current(), 1);
        std::fs::write(&path, "22").unwrap();
        assert_eq!(*reloading.current(), 22);
        std::fs::write(&path, "bad").unwrap();
        assert_eq!(*reloading.current(), 22);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
