//! `processors: resource:` in the registry.

use super::{ResourceProcessor, ResourceProcessorConfig};
use crate::component::{ProcessorFactory, StartError};
use crate::pipeline::Processor;
use crate::telemetry::Registry;

pub struct ResourceProcessorFactory;

impl ProcessorFactory for ResourceProcessorFactory {
    const KIND: &'static str = "resource";
    type Options = ResourceProcessorConfig;

    fn build(
        &self,
        id: &str,
        options: &ResourceProcessorConfig,
        _telemetry: &Registry,
    ) -> Result<Box<dyn Processor>, StartError> {
        let processor =
            ResourceProcessor::new(options).map_err(|reason| StartError::processor(id, reason))?;
        Ok(Box::new(processor))
    }
}
