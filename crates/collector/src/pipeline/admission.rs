//! What may close a pipeline's intake for a while, beside its byte budget:
//! a processor that watches something outside the pipeline (the
//! `memory_limiter` watches the process's memory). Processors run after the
//! pipeline's queue, so a processor that refuses data hands the pipeline a
//! [`Gate`], and receivers ask every gate before they take a request.

use std::fmt;
use std::sync::Arc;

use crate::telemetry::Registry;

/// A switch at a pipeline's intake, kept current by its own task.
pub trait Gate: Send + Sync {
    /// Why new data is refused now, or `None` when it is admitted.
    fn refusal(&self) -> Option<String>;

    /// Starts keeping the gate current, on the Tokio runtime. The service
    /// starts each gate once; the task ends when the gate is dropped.
    fn start(self: Arc<Self>, context: GateContext<'_>);
}

/// What a gate starts with.
pub struct GateContext<'a> {
    /// The pipeline it guards, for its metrics' labels.
    pub pipeline: &'a str,
    pub hooks: &'a Hooks,
    pub metrics: &'a Arc<Registry>,
}

/// What the program that runs the collector lends its components: the
/// library cannot reach into the allocator itself.
#[derive(Clone, Default)]
pub struct Hooks {
    /// Gives the memory the allocator keeps for reuse back to the system.
    pub release_memory: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl Hooks {
    /// Calls [`Self::release_memory`]; whether there was one.
    pub fn release_memory(&self) -> bool {
        self.release_memory
            .as_ref()
            .map(|release| release())
            .is_some()
    }
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("release_memory", &self.release_memory.is_some())
            .finish()
    }
}
