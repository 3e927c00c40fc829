//! `processors: symbolize:` in the registry.

use super::{SymbolizeMetrics, SymbolizeProcessor, SymbolizeProcessorConfig};
use crate::component::{ProcessorFactory, StartError};
use crate::pipeline::Processor;
use crate::telemetry::Registry;

pub struct SymbolizeProcessorFactory;

impl ProcessorFactory for SymbolizeProcessorFactory {
    const KIND: &'static str = "symbolize";
    type Options = SymbolizeProcessorConfig;

    fn build(
        &self,
        id: &str,
        options: &SymbolizeProcessorConfig,
        telemetry: &Registry,
    ) -> Result<Box<dyn Processor>, StartError> {
        let metrics = SymbolizeMetrics::new(telemetry, id);
        let processor = SymbolizeProcessor::new(options, metrics)
            .map_err(|reason| StartError::processor(id, reason))?;
        Ok(Box::new(processor))
    }
}
