//! The typed configuration: components by id, pipelines, self-telemetry.

use super::component_id::ComponentId;
pub use super::options::ComponentConfig;
use super::telemetry::TelemetryConfig;

/// The whole configuration, components in the order the file lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub receivers: Vec<(ComponentId, ReceiverConfig)>,
    pub processors: Vec<(ComponentId, ProcessorConfig)>,
    pub exporters: Vec<(ComponentId, ExporterConfig)>,
    /// Defined extensions; only those `service.extensions` lists run.
    pub extensions: Vec<(ComponentId, ExtensionConfig)>,
    pub service: ServiceConfig,
}

/// `service:`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServiceConfig {
    /// The extensions that run, started in this order.
    pub extensions: Vec<ComponentId>,
    /// Keyed `profiles` or `profiles/NAME`.
    pub pipelines: Vec<(String, PipelineConfig)>,
    pub telemetry: TelemetryConfig,
}

/// One pipeline: the receivers that feed it, the processors profiles pass
/// through in order, the exporters that get every profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipelineConfig {
    pub receivers: Vec<ComponentId>,
    pub processors: Vec<ComponentId>,
    pub exporters: Vec<ComponentId>,
    pub queue: super::queue::QueueConfig,
}

/// A receiver's type and options.
pub type ReceiverConfig = ComponentConfig;
/// A processor's type and options.
pub type ProcessorConfig = ComponentConfig;
/// An exporter's type and options.
pub type ExporterConfig = ComponentConfig;
/// An extension's type and options.
pub type ExtensionConfig = ComponentConfig;

impl PipelineConfig {
    /// Every component id the pipeline names, with the section it is
    /// defined under.
    pub fn members(&self) -> impl Iterator<Item = (Section, &ComponentId)> {
        let receivers = self.receivers.iter().map(|id| (Section::Receivers, id));
        let processors = self.processors.iter().map(|id| (Section::Processors, id));
        let exporters = self.exporters.iter().map(|id| (Section::Exporters, id));
        receivers.chain(processors).chain(exporters)
    }
}

/// The component sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Receivers,
    Processors,
    Exporters,
    /// Not in pipelines: `service.extensions` lists those that run.
    Extensions,
}

impl Section {
    /// The sections pipelines name components from.
    pub const ALL: [Self; 3] = [Self::Receivers, Self::Processors, Self::Exporters];

    /// The top-level key, which is also the pipeline's list key.
    pub fn key(self) -> &'static str {
        match self {
            Self::Receivers => "receivers",
            Self::Processors => "processors",
            Self::Exporters => "exporters",
            Self::Extensions => "extensions",
        }
    }
}

impl Config {
    /// The components defined under `section`, in file order.
    pub fn section(&self, section: Section) -> &[(ComponentId, ComponentConfig)] {
        match section {
            Section::Receivers => &self.receivers,
            Section::Processors => &self.processors,
            Section::Exporters => &self.exporters,
            Section::Extensions => &self.extensions,
        }
    }

    pub(crate) fn section_mut(
        &mut self,
        section: Section,
    ) -> &mut Vec<(ComponentId, ComponentConfig)> {
        match section {
            Section::Receivers => &mut self.receivers,
            Section::Processors => &mut self.processors,
            Section::Exporters => &mut self.exporters,
            Section::Extensions => &mut self.extensions,
        }
    }

    /// The ids defined under `section`, in file order.
    pub fn ids(&self, section: Section) -> Vec<&ComponentId> {
        self.section(section).iter().map(|(id, _)| id).collect()
    }
}
