//! `processors: memory_limiter:` in the registry.

use super::{MemoryLimiter, MemoryLimiterConfig, MemoryLimiterProcessor};
use crate::component::{ProcessorFactory, StartError};
use crate::pipeline::Processor;
use crate::telemetry::Registry;

pub struct MemoryLimiterFactory;

impl ProcessorFactory for MemoryLimiterFactory {
    const KIND: &'static str = "memory_limiter";
    type Options = MemoryLimiterConfig;

    fn build(
        &self,
        id: &str,
        options: &MemoryLimiterConfig,
        _telemetry: &Registry,
    ) -> Result<Box<dyn Processor>, StartError> {
        let limiter = MemoryLimiter::of_this_process(id, options)?;
        Ok(Box::new(MemoryLimiterProcessor::new(limiter)))
    }
}
