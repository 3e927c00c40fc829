//! What every component is: a factory that parses its options and builds
//! or starts it, and the error of that. Each receiver, processor,
//! exporter and extension folder implements one of the factory traits; the registry
//! (`crate::components`) lists them; the service builds every component
//! through it.

mod error;
pub mod extension;
pub mod listen;

use std::collections::BTreeSet;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::pipeline::{Exporter, PipelineHandle, Processor};
use crate::settings::exporter_helper::{EmbedsHelper, ExporterHelperConfig};
use crate::settings::key_paths::KeyPathsError;
use crate::settings::options_key_paths;
use crate::settings::{deserialize_embedding, ComponentConfig, Options, Problem};
use crate::telemetry::Registry;

pub use error::{CannotListen, StartError};
pub use extension::{
    ExtensionContext, ExtensionStartFuture, Extensions, Host, Offers, StartedExtension, Storage,
};

/// An address the collector listens on, for the start-up message.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub what: String,
    pub address: SocketAddr,
}

/// What a receiver starts with.
#[derive(Clone)]
pub struct ReceiverContext<'a> {
    /// Its id, as written in the configuration.
    pub id: &'a str,
    /// The pipelines it feeds.
    pub pipelines: Arc<[PipelineHandle]>,
    /// The collector's own metrics.
    pub metrics: &'a Arc<Registry>,
    /// The extensions that run, like authenticators.
    pub extensions: &'a Extensions,
    /// Turns true when the collector stops.
    pub stopped: watch::Receiver<bool>,
    /// The cap of each of its listeners whose `max_connections` is not
    /// written: derived at start from the file descriptor limit.
    pub max_connections: usize,
}

/// What a started receiver runs and tells the start-up message.
#[derive(Default)]
pub struct StartedReceiver {
    /// Its tasks, finished at shutdown.
    pub tasks: Vec<JoinHandle<()>>,
    pub listening: Vec<Endpoint>,
    /// What it watches, like folders.
    pub watching: Vec<String>,
}

pub type StartFuture<'a> =
    Pin<Box<dyn Future<Output = Result<StartedReceiver, StartError>> + Send + 'a>>;

/// One receiver type.
pub trait ReceiverFactory: Sync + 'static {
    /// The type, as written in component ids.
    const KIND: &'static str;
    type Options: Options + DeserializeOwned + Default;

    fn start<'a>(
        &'a self,
        options: &'a Self::Options,
        context: ReceiverContext<'a>,
    ) -> StartFuture<'a>;

    /// What [`Self::start`] would refuse before binding a port: TLS
    /// material and tokens that do not load.
    fn check(&self, _id: &str, _options: &Self::Options) -> Vec<StartError> {
        Vec::new()
    }
}

/// One processor type.
pub trait ProcessorFactory: Sync + 'static {
    const KIND: &'static str;
    type Options: Options + DeserializeOwned + Default;

    /// Builds the processor; one that counts what it does registers its
    /// counters in `telemetry`.
    fn build(
        &self,
        id: &str,
        options: &Self::Options,
        telemetry: &Registry,
    ) -> Result<Box<dyn Processor>, StartError>;
}

/// A built exporter, and what it tells the start-up message.
pub struct BuiltExporter {
    pub exporter: Exporter,
    /// Where it writes or sends, when it does.
    pub writing: Option<String>,
}

/// One exporter type.
pub trait ExporterFactory: Sync + 'static {
    const KIND: &'static str;
    /// Its options, which embed the exporter helper's (and the client's,
    /// for an exporter that connects somewhere).
    type Options: Options + EmbedsHelper;

    fn build(&self, id: &str, options: &Self::Options) -> Result<BuiltExporter, StartError>;

    /// [`Self::build`] with the running extensions, for an exporter that
    /// names one (an authenticator).
    fn build_with(
        &self,
        id: &str,
        options: &Self::Options,
        _extensions: &Extensions,
    ) -> Result<BuiltExporter, StartError> {
        self.build(id, options)
    }

    /// What [`Self::build`] would refuse, checked without side effects.
    fn check(&self, id: &str, options: &Self::Options) -> Option<StartError> {
        self.build(id, options).err()
    }
}

/// One extension type.
pub trait ExtensionFactory: Sync + 'static {
    const KIND: &'static str;
    type Options: Options + DeserializeOwned + Default;

    /// Starts it: binds what it listens on, spawns what it runs.
    fn start<'a>(
        &'a self,
        options: &'a Self::Options,
        context: ExtensionContext<'a>,
    ) -> ExtensionStartFuture<'a>;

    /// What [`Self::start`] would refuse, checked without binding or
    /// creating anything.
    fn check(&self, _id: &str, _options: &Self::Options) -> Vec<StartError> {
        Vec::new()
    }
}

/// Any [`ExtensionFactory`], as the registry holds it.
pub trait AnyExtensionFactory: Sync {
    fn kind(&self) -> &'static str;
    fn parse(&self, value: ::config::Value, path: &str) -> Result<ComponentConfig, Problem>;
    /// Every key path its options take, under its own section.
    fn key_paths(&self) -> Result<BTreeSet<String>, KeyPathsError>;
    fn start<'a>(
        &'a self,
        config: &'a ComponentConfig,
        context: ExtensionContext<'a>,
    ) -> ExtensionStartFuture<'a>;
    fn check(&self, id: &str, config: &ComponentConfig) -> Vec<StartError>;
}

impl<F: ExtensionFactory> AnyExtensionFactory for F {
    fn kind(&self) -> &'static str {
        F::KIND
    }

    fn parse(&self, value: ::config::Value, path: &str) -> Result<ComponentConfig, Problem> {
        parse_as::<F::Options>(F::KIND, value, path)
    }

    fn key_paths(&self) -> Result<BTreeSet<String>, KeyPathsError> {
        options_key_paths::<F::Options>()
    }

    fn start<'a>(
        &'a self,
        config: &'a ComponentConfig,
        context: ExtensionContext<'a>,
    ) -> ExtensionStartFuture<'a> {
        match options_of::<F::Options>(context.id, F::KIND, config) {
            Ok(options) => ExtensionFactory::start(self, options, context),
            Err(error) => Box::pin(async move { Err(error) }),
        }
    }

    fn check(&self, id: &str, config: &ComponentConfig) -> Vec<StartError> {
        match options_of::<F::Options>(id, F::KIND, config) {
            Ok(options) => ExtensionFactory::check(self, id, options),
            Err(error) => vec![error],
        }
    }
}

/// The authenticator extension an exporter's `auth` names, running.
pub fn client_auth(
    id: &str,
    auth: Option<&crate::settings::tls::ClientAuthConfig>,
    extensions: &Extensions,
) -> Result<Option<crate::tls::BearerAuth>, StartError> {
    let Some(auth) = auth else {
        return Ok(None);
    };
    extensions
        .authenticator(&auth.authenticator)
        .cloned()
        .map(Some)
        .ok_or_else(|| StartError::exporter(id, NotRunning(auth.authenticator.to_string())))
}

/// An exporter's `auth.authenticator` names no running authenticator.
#[derive(Debug, thiserror::Error)]
#[error("auth.authenticator: {0} is not a running authenticator extension")]
struct NotRunning(String);

/// Any [`ReceiverFactory`], as the registry holds it.
pub trait AnyReceiverFactory: Sync {
    fn kind(&self) -> &'static str;
    fn parse(&self, value: ::config::Value, path: &str) -> Result<ComponentConfig, Problem>;
    /// Every key path its options take, under its own section.
    fn key_paths(&self) -> Result<BTreeSet<String>, KeyPathsError>;
    fn start<'a>(
        &'a self,
        config: &'a ComponentConfig,
        context: ReceiverContext<'a>,
    ) -> StartFuture<'a>;
    fn check(&self, id: &str, config: &ComponentConfig) -> Vec<StartError>;
}

/// Any [`ProcessorFactory`], as the registry holds it.
pub trait AnyProcessorFactory: Sync {
    fn kind(&self) -> &'static str;
    fn parse(&self, value: ::config::Value, path: &str) -> Result<ComponentConfig, Problem>;
    /// Every key path its options take, under its own section.
    fn key_paths(&self) -> Result<BTreeSet<String>, KeyPathsError>;
    fn build(
        &self,
        id: &str,
        config: &ComponentConfig,
        telemetry: &Registry,
    ) -> Result<Box<dyn Processor>, StartError>;
}

/// Any [`ExporterFactory`], as the registry holds it.
pub trait AnyExporterFactory: Sync {
    fn kind(&self) -> &'static str;
    fn parse(&self, value: ::config::Value, path: &str) -> Result<ComponentConfig, Problem>;
    /// Every key path its options take, under its own section.
    fn key_paths(&self) -> Result<BTreeSet<String>, KeyPathsError>;
    fn build(
        &self,
        id: &str,
        config: &ComponentConfig,
        extensions: &Extensions,
    ) -> Result<BuiltExporter, StartError>;
    fn settings(&self, config: &ComponentConfig) -> ExporterHelperConfig;
    fn check(&self, id: &str, config: &ComponentConfig) -> Option<StartError>;
}

fn parse_as<T: Options + DeserializeOwned + Default>(
    kind: &'static str,
    value: ::config::Value,
    path: &str,
) -> Result<ComponentConfig, Problem> {
    deserialize_embedding::<T>(value, path).map(|options| ComponentConfig::new(kind, options))
}

/// The options of `config`, which the registry gave to the factory of
/// their own type.
fn options_of<'a, T: Options>(
    id: &str,
    kind: &'static str,
    config: &'a ComponentConfig,
) -> Result<&'a T, StartError> {
    config
        .options::<T>()
        .ok_or_else(|| StartError::other(id, format!("its options are not {kind} options")))
}

impl<F: ReceiverFactory> AnyReceiverFactory for F {
    fn kind(&self) -> &'static str {
        F::KIND
    }

    fn parse(&self, value: ::config::Value, path: &str) -> Result<ComponentConfig, Problem> {
        parse_as::<F::Options>(F::KIND, value, path)
    }

    fn key_paths(&self) -> Result<BTreeSet<String>, KeyPathsError> {
        options_key_paths::<F::Options>()
    }

    fn start<'a>(
        &'a self,
        config: &'a ComponentConfig,
        context: ReceiverContext<'a>,
    ) -> StartFuture<'a> {
        match options_of::<F::Options>(context.id, F::KIND, config) {
            Ok(options) => ReceiverFactory::start(self, options, context),
            Err(error) => Box::pin(async move { Err(error) }),
        }
    }

    fn check(&self, id: &str, config: &ComponentConfig) -> Vec<StartError> {
        match options_of::<F::Options>(id, F::KIND, config) {
            Ok(options) => ReceiverFactory::check(self, id, options),
            Err(error) => vec![error],
        }
    }
}

impl<F: ProcessorFactory> AnyProcessorFactory for F {
    fn kind(&self) -> &'static str {
        F::KIND
    }

    fn parse(&self, value: ::config::Value, path: &str) -> Result<ComponentConfig, Problem> {
        parse_as::<F::Options>(F::KIND, value, path)
    }

    fn key_paths(&self) -> Result<BTreeSet<String>, KeyPathsError> {
        options_key_paths::<F::Options>()
    }

    fn build(
        &self,
        id: &str,
        config: &ComponentConfig,
        telemetry: &Registry,
    ) -> Result<Box<dyn Processor>, StartError> {
        let options = options_of::<F::Options>(id, F::KIND, config)?;
        ProcessorFactory::build(self, id, options, telemetry)
    }
}

impl<F: ExporterFactory> AnyExporterFactory for F {
    fn kind(&self) -> &'static str {
        F::KIND
    }

    fn parse(&self, value: ::config::Value, path: &str) -> Result<ComponentConfig, Problem> {
        deserialize_embedding::<F::Options>(value, path).map(|options| {
            let helper_refs = options.helper().extension_refs();
            ComponentConfig::new(F::KIND, options).with_refs(helper_refs)
        })
    }

    fn key_paths(&self) -> Result<BTreeSet<String>, KeyPathsError> {
        options_key_paths::<F::Options>()
    }

    fn build(
        &self,
        id: &str,
        config: &ComponentConfig,
        extensions: &Extensions,
    ) -> Result<BuiltExporter, StartError> {
        let options = options_of::<F::Options>(id, F::KIND, config)?;
        ExporterFactory::build_with(self, id, options, extensions)
    }

    fn settings(&self, config: &ComponentConfig) -> ExporterHelperConfig {
        config
            .options::<F::Options>()
            .map(|options| options.helper().clone())
            .unwrap_or_default()
    }

    fn check(&self, id: &str, config: &ComponentConfig) -> Option<StartError> {
        match options_of::<F::Options>(id, F::KIND, config) {
            Ok(options) => ExporterFactory::check(self, id, options),
            Err(error) => Some(error),
        }
    }
}
