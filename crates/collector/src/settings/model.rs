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
    pub service: ServiceConfig,
}

/// `service:`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServiceConfig {
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

/// The three component sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Receivers,
    Processors,
    Exporters,
}

impl Section {
    pub const ALL: [Self; 3] = [Self::Receivers, Self::Processors, Self::Exporters];

    /// The top-level key, which is also the pipeline's list key.
    pub fn key(self) -> &'static str {
        match self {
            Self::Receivers => "receivers",
            Self::Processors => "processors",
            Self::Exporters => "exporters",
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
        }
    }

    /// The ids defined under `section`, in file order.
    pub fn ids(&self, section: Section) -> Vec<&ComponentId> {
        match section {
            Section::Receivers => self.receivers.iter().map(|(id, _)| id).collect(),
            Section::Processors => self.processors.iter().map(|(id, _)| id).collect(),
            Section::Exporters => self.exporters.iter().map(|(id, _)| id).collect(),
        }
    }
}
