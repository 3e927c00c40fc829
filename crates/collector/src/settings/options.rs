//! A component's options, typed in the component's own folder and held
//! here behind one trait, so that the configuration knows no component;
//! and the catalog of component types the parser asks for their options.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::parts::{EmbeddedPart, NestedSection};
use super::problems::Problem;
use super::refs::{ExtensionRef, ExtensionRole, OwnedFile};
use super::server::{HttpListener, ListenerCap};

/// What every component's options tell the configuration checks.
pub trait Options: fmt::Debug + PartialEq + Send + Sync + 'static {
    /// What is wrong, each at its path under the component's own key.
    fn problems(&self) -> Vec<Problem> {
        self.http_listener()
            .map(HttpListener::problems)
            .unwrap_or_default()
    }

    /// What is written in a shape that still works but is deprecated,
    /// each at its path under the component's own key.
    fn warnings(&self) -> Vec<Problem> {
        Vec::new()
    }

    /// The addresses it listens on, each with its key path under the
    /// component's own key.
    fn listeners(&self) -> Vec<(String, String)> {
        self.http_listener()
            .map(|listener| ("endpoint".to_owned(), listener.server.endpoint.clone()))
            .into_iter()
            .collect()
    }

    /// The `max_connections` of each listener the options have, as
    /// [`Self::listeners`] lists them.
    fn connection_caps(&self) -> Vec<ListenerCap> {
        self.http_listener()
            .map(|listener| ListenerCap::at("", listener.connection.max_connections))
            .into_iter()
            .collect()
    }

    /// The HTTP listener embedded at the top of the options, if any: its
    /// keys sit beside the options' own, its endpoint is a listener, and
    /// its `auth` names an extension.
    fn http_listener(&self) -> Option<&HttpListener> {
        None
    }

    /// [`Self::http_listener`], to parse into.
    fn http_listener_mut(&mut self) -> Option<&mut HttpListener> {
        None
    }

    /// A file that only this component may use, like a checkpoint.
    fn owned_file(&self, _id: &str) -> Option<OwnedFile> {
        None
    }

    /// The extensions the options name, like an authenticator.
    fn extension_refs(&self) -> Vec<ExtensionRef> {
        self.http_listener()
            .and_then(|listener| listener.server.extension_ref(""))
            .into_iter()
            .collect()
    }

    /// What an extension with these options offers other components.
    fn roles(&self) -> &'static [ExtensionRole] {
        &[]
    }

    /// The shared settings these options embed, whose keys sit beside
    /// their own ([`super::embed`]); their fields are `#[serde(skip)]`
    /// and hold the component's defaults. In the order "unknown key"
    /// messages list them.
    fn embedded(&mut self) -> Vec<&mut dyn EmbeddedPart> {
        match self.http_listener_mut() {
            Some(listener) => vec![&mut listener.server, &mut listener.connection],
            None => Vec::new(),
        }
    }

    /// Sections below the options' own keys whose options embed shared
    /// settings in turn, like the OTLP receiver's `protocols.http`.
    fn nested_sections() -> Vec<NestedSection<Self>>
    where
        Self: Sized,
    {
        Vec::new()
    }
}

/// [`Options`] as a trait object, compared and downcast.
trait AnyOptions: fmt::Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn same_as(&self, other: &dyn AnyOptions) -> bool;
    fn problems(&self) -> Vec<Problem>;
    fn warnings(&self) -> Vec<Problem>;
    fn listeners(&self) -> Vec<(String, String)>;
    fn connection_caps(&self) -> Vec<ListenerCap>;
    fn owned_file(&self, id: &str) -> Option<OwnedFile>;
    fn extension_refs(&self) -> Vec<ExtensionRef>;
    fn roles(&self) -> &'static [ExtensionRole];
}

impl<T: Options> AnyOptions for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn same_as(&self, other: &dyn AnyOptions) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }

    fn problems(&self) -> Vec<Problem> {
        Options::problems(self)
    }

    fn warnings(&self) -> Vec<Problem> {
        Options::warnings(self)
    }

    fn listeners(&self) -> Vec<(String, String)> {
        Options::listeners(self)
    }

    fn connection_caps(&self) -> Vec<ListenerCap> {
        Options::connection_caps(self)
    }

    fn owned_file(&self, id: &str) -> Option<OwnedFile> {
        Options::owned_file(self, id)
    }

    fn extension_refs(&self) -> Vec<ExtensionRef> {
        Options::extension_refs(self)
    }

    fn roles(&self) -> &'static [ExtensionRole] {
        Options::roles(self)
    }
}

/// One component's type and options.
#[derive(Clone)]
pub struct ComponentConfig {
    kind: &'static str,
    options: Arc<dyn AnyOptions>,
    /// Extensions named outside the options' own [`Options::extension_refs`],
    /// like an exporter's embedded queue storage.
    more_refs: Vec<ExtensionRef>,
}

impl ComponentConfig {
    pub fn new<T: Options>(kind: &'static str, options: T) -> Self {
        Self {
            kind,
            options: Arc::new(options),
            more_refs: Vec::new(),
        }
    }

    /// With `refs` among its [`Self::extension_refs`].
    #[must_use]
    pub fn with_refs(mut self, refs: Vec<ExtensionRef>) -> Self {
        self.more_refs.extend(refs);
        self
    }

    /// The type, as written in component ids.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The options, when they are a `T`.
    pub fn options<T: Options>(&self) -> Option<&T> {
        self.options.as_any().downcast_ref()
    }

    pub fn problems(&self) -> Vec<Problem> {
        self.options.problems()
    }

    pub fn warnings(&self) -> Vec<Problem> {
        self.options.warnings()
    }

    pub fn listeners(&self) -> Vec<(String, String)> {
        self.options.listeners()
    }

    pub fn connection_caps(&self) -> Vec<ListenerCap> {
        self.options.connection_caps()
    }

    pub fn owned_file(&self, id: &str) -> Option<OwnedFile> {
        self.options.owned_file(id)
    }

    /// Every extension the component names.
    pub fn extension_refs(&self) -> Vec<ExtensionRef> {
        let mut refs = self.options.extension_refs();
        refs.extend(self.more_refs.iter().cloned());
        refs
    }

    /// What it offers other components, when it is an extension.
    pub fn roles(&self) -> &'static [ExtensionRole] {
        self.options.roles()
    }
}

impl fmt::Debug for ComponentConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple(self.kind).field(&self.options).finish()
    }
}

impl PartialEq for ComponentConfig {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.options.same_as(other.options.as_ref())
    }
}
