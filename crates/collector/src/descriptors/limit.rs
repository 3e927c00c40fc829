//! The soft limit on open files, read and raised.

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// RLIMIT_NOFILE as the collector found it and left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescriptorLimit {
    /// The soft limit in force; `None` when there is none.
    pub soft: Option<u64>,
    /// The soft limit before [`raise_to_hard_limit`] raised it, if it did.
    pub raised_from: Option<u64>,
}

impl DescriptorLimit {
    /// The limit in force now.
    pub fn current() -> Self {
        Self {
            soft: getrlimit(Resource::Nofile).current,
            raised_from: None,
        }
    }
}

/// The soft limit could not be raised.
#[derive(Debug, thiserror::Error)]
#[error("raising the limit of open files from {from} to the hard limit {to}: {error}")]
pub struct RaiseError {
    pub from: u64,
    pub to: u64,
    pub error: std::io::Error,
}

/// Raises the soft limit of open files to the hard limit, as the Go
/// runtime does at start; a hard limit of "unlimited" is left alone (Linux
/// refuses it as a soft limit for open files).
pub fn raise_to_hard_limit() -> Result<DescriptorLimit, RaiseError> {
    let found = getrlimit(Resource::Nofile);
    let (Some(soft), Some(hard)) = (found.current, found.maximum) else {
        return Ok(DescriptorLimit {
            soft: found.current,
            raised_from: None,
        });
    };
    if soft >= hard {
        return Ok(DescriptorLimit {
            soft: Some(soft),
            raised_from: None,
        });
    }
    let raised = Rlimit {
        current: Some(hard),
        maximum: Some(hard),
    };
    setrlimit(Resource::Nofile, raised).map_err(|error| RaiseError {
        from: soft,
        to: hard,
        error: error.into(),
    })?;
    Ok(DescriptorLimit {
        soft: Some(hard),
        raised_from: Some(soft),
    })
}
