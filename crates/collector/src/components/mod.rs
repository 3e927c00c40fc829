//! The registry: every component type, one line each, and the only list
//! of them. The configuration parser finds a type's options parser here,
//! the service builds every component through it, and the tests read the
//! types and their option key paths from it. Adding a component is its
//! own folder, its `mod` line, one line below and its section in
//! docs/configuration.md.

use std::collections::BTreeSet;

use ::config::Value;

use crate::component::{
    AnyExporterFactory, AnyExtensionFactory, AnyProcessorFactory, AnyReceiverFactory,
};
use crate::settings::key_paths::KeyPathsError;
use crate::settings::{Catalog, ComponentConfig, Problem, Section};

/// Receiver types, in the order messages list them.
const RECEIVERS: &[&dyn AnyReceiverFactory] = &[
    &crate::receivers::otlp::OtlpReceiverFactory,
    &crate::receivers::pprof::PprofReceiverFactory,
    &crate::receivers::pyroscope::PyroscopeReceiverFactory,
    &crate::receivers::file::FileReceiverFactory,
    &crate::receivers::kafka::KafkaReceiverFactory,
    &crate::receivers::nop::NopReceiverFactory,
];

/// Processor types, in the order messages list them.
const PROCESSORS: &[&dyn AnyProcessorFactory] = &[
    &crate::processors::batch::BatchProcessorFactory,
    &crate::processors::resource::ResourceProcessorFactory,
    &crate::processors::memory_limiter::MemoryLimiterFactory,
    &crate::processors::symbolize::SymbolizeProcessorFactory,
];

/// Exporter types, in the order messages list them.
const EXPORTERS: &[&dyn AnyExporterFactory] = &[
    &crate::exporters::file::FileExporterFactory,
    &crate::exporters::debug::DebugExporterFactory,
    &crate::exporters::nop::NopExporterFactory,
    &crate::exporters::otlp::OtlpExporterFactory,
    &crate::exporters::otlp_http::OtlpHttpExporterFactory,
    &crate::exporters::pyroscope::PyroscopeExporterFactory,
    &crate::exporters::kafka::KafkaExporterFactory,
];

/// Extension types, in the order messages list them.
const EXTENSIONS: &[&dyn AnyExtensionFactory] = &[
    &crate::extensions::health_check::HealthCheckExtensionFactory,
    &crate::extensions::file_storage::FileStorageExtensionFactory,
    &crate::extensions::bearertokenauth::BearerTokenAuthExtensionFactory,
    &crate::extensions::pprof::PprofExtensionFactory,
    &crate::extensions::zpages::ZPagesExtensionFactory,
];

/// Every component type the collector has.
#[derive(Debug, Clone, Copy, Default)]
pub struct Registry;

impl Registry {
    pub fn receiver(&self, kind: &str) -> Option<&'static dyn AnyReceiverFactory> {
        RECEIVERS
            .iter()
            .copied()
            .find(|factory| factory.kind() == kind)
    }

    pub fn processor(&self, kind: &str) -> Option<&'static dyn AnyProcessorFactory> {
        PROCESSORS
            .iter()
            .copied()
            .find(|factory| factory.kind() == kind)
    }

    /// The exporter of type `kind`, or of which `kind` is the Collector's
    /// other name ([`EXPORTER_ALIASES`]).
    pub fn exporter(&self, kind: &str) -> Option<&'static dyn AnyExporterFactory> {
        let kind = EXPORTER_ALIASES
            .iter()
            .find(|(alias, _)| *alias == kind)
            .map_or(kind, |(_, kind)| *kind);
        EXPORTERS
            .iter()
            .copied()
            .find(|factory| factory.kind() == kind)
    }

    pub fn extension(&self, kind: &str) -> Option<&'static dyn AnyExtensionFactory> {
        EXTENSIONS
            .iter()
            .copied()
            .find(|factory| factory.kind() == kind)
    }

    /// Every key path the options of a `kind` component take, under its
    /// own section; `None` when the section has no such type.
    pub fn key_paths(
        &self,
        section: Section,
        kind: &str,
    ) -> Option<Result<BTreeSet<String>, KeyPathsError>> {
        Some(match section {
            Section::Receivers => self.receiver(kind)?.key_paths(),
            Section::Processors => self.processor(kind)?.key_paths(),
            Section::Exporters => self.exporter(kind)?.key_paths(),
            Section::Extensions => self.extension(kind)?.key_paths(),
        })
    }
}

/// The OpenTelemetry Collector's newer names (since v0.144) for exporters
/// profbridge has under their older names, as (alias, type). A component
/// keeps the id it is written with.
const EXPORTER_ALIASES: &[(&str, &str)] = &[("otlp_grpc", "otlp"), ("otlp_http", "otlphttp")];

impl Catalog for Registry {
    fn types(&self, section: Section) -> Vec<&'static str> {
        match section {
            Section::Receivers => RECEIVERS.iter().map(|factory| factory.kind()).collect(),
            Section::Processors => PROCESSORS.iter().map(|factory| factory.kind()).collect(),
            Section::Exporters => EXPORTERS.iter().map(|factory| factory.kind()).collect(),
            Section::Extensions => EXTENSIONS.iter().map(|factory| factory.kind()).collect(),
        }
    }

    fn parse(
        &self,
        section: Section,
        kind: &str,
        value: Value,
        path: &str,
    ) -> Option<Result<ComponentConfig, Problem>> {
        Some(match section {
            Section::Receivers => self.receiver(kind)?.parse(value, path),
            Section::Processors => self.processor(kind)?.parse(value, path),
            Section::Exporters => self.exporter(kind)?.parse(value, path),
            Section::Extensions => self.extension(kind)?.parse(value, path),
        })
    }
}
