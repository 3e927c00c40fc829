//! Extensions: components outside the pipelines (a health endpoint,
//! storage for persistent queues, authenticators). The service starts
//! those `service.extensions` lists before any receiver, hands each a
//! [`Host`], and stops them after every receiver and exporter. What one
//! offers other components ([`Offers`]) is found by its id in
//! [`Extensions`].

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{Endpoint, StartError};
use crate::settings::{ComponentId, Config};
use crate::telemetry::{Readiness, Registry};
use crate::tls::BearerAuth;

/// What the service shares with every extension.
pub struct Host {
    /// Where the collector is in its life: starting, ready (every
    /// receiver listens), shutting down.
    pub readiness: Arc<Readiness>,
    /// The collector's own metrics: what flows, is queued and refused.
    pub metrics: Arc<Registry>,
    /// The configuration it runs: its pipelines and components.
    pub config: Arc<Config>,
}

/// What an extension starts with.
pub struct ExtensionContext<'a> {
    /// Its id, as written in the configuration.
    pub id: &'a str,
    pub host: &'a Arc<Host>,
    /// Turns true when the service stops its extensions, after every
    /// receiver and exporter.
    pub stopped: watch::Receiver<bool>,
}

/// What a started extension runs, listens on and offers.
#[derive(Default)]
pub struct StartedExtension {
    /// Its tasks, finished at shutdown.
    pub tasks: Vec<JoinHandle<()>>,
    pub listening: Vec<Endpoint>,
    pub offers: Offers,
}

/// What an extension offers other components.
#[derive(Clone, Default)]
pub struct Offers {
    /// Where exporters' persistent queues are kept.
    pub storage: Option<Arc<dyn Storage>>,
    /// Credentials: checked on receivers, added by exporters.
    pub authenticator: Option<BearerAuth>,
}

/// A storage extension.
pub trait Storage: Send + Sync {
    /// The directory of the persistent sending queue of `exporter`.
    fn exporter_queue(&self, exporter: &ComponentId) -> PathBuf;
}

/// The extensions that started, by id.
#[derive(Clone, Default)]
pub struct Extensions {
    started: Vec<(ComponentId, Offers)>,
}

impl Extensions {
    pub fn add(&mut self, id: ComponentId, offers: Offers) {
        self.started.push((id, offers));
    }

    /// What the extension `id` offers, when it runs.
    pub fn get(&self, id: &ComponentId) -> Option<&Offers> {
        self.started
            .iter()
            .find(|(started, _)| started == id)
            .map(|(_, offers)| offers)
    }

    /// The storage extension `id`.
    pub fn storage(&self, id: &ComponentId) -> Option<&Arc<dyn Storage>> {
        self.get(id)?.storage.as_ref()
    }

    /// The authenticator extension `id`.
    pub fn authenticator(&self, id: &ComponentId) -> Option<&BearerAuth> {
        self.get(id)?.authenticator.as_ref()
    }
}

pub type ExtensionStartFuture<'a> =
    Pin<Box<dyn Future<Output = Result<StartedExtension, StartError>> + Send + 'a>>;
