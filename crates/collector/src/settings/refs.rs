//! What a component's options name outside themselves: extensions they
//! use, and files only they may use.

use std::path::PathBuf;

use super::component_id::ComponentId;

/// What an extension can be to other components.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionRole {
    /// Where persistent sending queues keep their data (`storage:`).
    Storage,
    /// Checks requests' credentials and adds a client's
    /// (`auth: {authenticator: …}`).
    Authenticator,
}

impl ExtensionRole {
    /// How messages name an extension in this role.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Storage => "a storage extension (like file_storage)",
            Self::Authenticator => "an authenticator extension (like bearertokenauth)",
        }
    }
}

/// One extension named by a component's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionRef {
    /// The option naming it, under the component's own key, like
    /// `sending_queue.storage`.
    pub key: String,
    pub id: ComponentId,
    /// What it must be.
    pub role: ExtensionRole,
}

/// A file one component owns: its key, where it is, what owns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedFile {
    /// The option naming it, like `checkpoint`.
    pub key: &'static str,
    pub path: PathBuf,
    /// What owns one, like `file receiver`.
    pub owner: &'static str,
}
