//! `processors: symbolize:` in the registry.

use super::{SymbolizeProcessor, SymbolizeProcessorConfig};
use crate::component::{ProcessorFactory, StartError};
use crate::pipeline::Processor;

pub struct SymbolizeProcessorFactory;

impl ProcessorFactory for SymbolizeProcessorFactory {
    const KIND: &'static str = "symbolize";
    type Options = SymbolizeProcessorConfig;

    fn build(
        &self,
        id: &str,
        options: &SymbolizeProcessorConfig,
    ) -> Result<Box<dyn Processor>, StartError> {
        let processor =
            SymbolizeProcessor::new(options).map_err(|reason| StartError::processor(id, reason))?;
        Ok(Box::new(processor))
    }
}
