//! `processors: batch:` in the registry.

use super::{BatchProcessorConfig, Batcher};
use crate::component::{ProcessorFactory, StartError};
use crate::pipeline::Processor;
use crate::telemetry::Registry;

pub struct BatchProcessorFactory;

impl ProcessorFactory for BatchProcessorFactory {
    const KIND: &'static str = "batch";
    type Options = BatchProcessorConfig;

    fn build(
        &self,
        id: &str,
        options: &BatchProcessorConfig,
        _telemetry: &Registry,
    ) -> Result<Box<dyn Processor>, StartError> {
        let batcher = Batcher::new(options).map_err(|reason| StartError::processor(id, reason))?;
        Ok(Box::new(batcher))
    }
}
