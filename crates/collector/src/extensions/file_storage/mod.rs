//! `extensions: file_storage:` is where persistent sending queues live
//! when an exporter names it (`sending_queue: {storage: file_storage}`),
//! as contrib's filestorage extension is: each exporter's queue gets its
//! own entry under `directory`, named as the Collector names its files
//! (`exporter_TYPE_NAME_profiles`, unsafe characters written `~XXXX`).
//! Here that entry is a directory of the queue's segment files.

mod config;

use std::path::PathBuf;
use std::sync::Arc;

pub use config::{CompactionConfig, FileStorageConfig, DEFAULT_DIRECTORY};

use crate::component::{
    ExtensionContext, ExtensionFactory, ExtensionStartFuture, Offers, StartError, StartedExtension,
    Storage,
};
use crate::settings::ComponentId;

pub struct FileStorageExtensionFactory;

impl ExtensionFactory for FileStorageExtensionFactory {
    const KIND: &'static str = "file_storage";
    type Options = FileStorageConfig;

    fn start<'a>(
        &'a self,
        options: &'a FileStorageConfig,
        context: ExtensionContext<'a>,
    ) -> ExtensionStartFuture<'a> {
        Box::pin(async move {
            let directory = PathBuf::from(&options.directory);
            if options.create_directory {
                create_directory(&directory, options.mode().unwrap_or(0o750))
                    .map_err(|error| StartError::extension(context.id, error))?;
            }
            Ok(StartedExtension {
                offers: Offers {
                    storage: Some(Arc::new(FileStorage { directory })),
                    ..Offers::default()
                },
                ..StartedExtension::default()
            })
        })
    }
}

/// Why the storage directory could not be created.
#[derive(Debug, thiserror::Error)]
#[error("cannot create {path}: {error}")]
pub struct CreateError {
    path: String,
    error: std::io::Error,
}

fn create_directory(directory: &std::path::Path, mode: u32) -> Result<(), CreateError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, mode);
    #[cfg(not(unix))]
    let _ = mode;
    builder.create(directory).map_err(|error| CreateError {
        path: directory.display().to_string(),
        error,
    })
}

struct FileStorage {
    directory: PathBuf,
}

impl Storage for FileStorage {
    fn exporter_queue(&self, exporter: &ComponentId) -> PathBuf {
        self.directory.join(client_name(exporter))
    }
}

/// The Collector's name for an exporter's profiles queue in its storage:
/// `exporter_TYPE_NAME_profiles` (the name empty for an unnamed
/// exporter), sanitized.
pub fn client_name(exporter: &ComponentId) -> String {
    let name = exporter.name.as_deref().unwrap_or("");
    sanitize(&format!("exporter_{}_{name}_profiles", exporter.kind))
}

/// Letters, digits, `.`, `-` and `_` stay; every other character is `~`
/// and its Unicode number in (at least four) hex digits.
fn sanitize(name: &str) -> String {
    let mut sanitized = String::with_capacity(name.len());
    for character in name.chars() {
        if character.is_ascii_alphanumeric() || matches!(character, '.' | '-' | '_') {
            sanitized.push(character);
        } else {
            sanitized.push_str(&format!("~{:04X}", u32::from(character)));
        }
    }
    sanitized
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_are_named_as_the_collector_names_its_files() {
        assert_eq!(
            client_name(&ComponentId::new("otlp")),
            "exporter_otlp__profiles"
        );
        assert_eq!(
            client_name(&ComponentId::named("otlphttp", "backup")),
            "exporter_otlphttp_backup_profiles"
        );
        assert_eq!(
            client_name(&ComponentId::named("otlp", "a b~c/é")),
            "exporter_otlp_a~0020b~007Ec~002F~00E9_profiles"
        );
    }
}
