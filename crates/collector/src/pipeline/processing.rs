//! The processors of a pipeline, run in order on the drain task. A batch
//! processor holds requests back; what it holds keeps its share of the
//! pipeline's budget until everything it held has gone on to the
//! exporters. Its receivers are answered as soon as it holds a request, as
//! the OpenTelemetry Collector's batch processor does: held in memory, a
//! request is exported at shutdown but lost if the process is killed, even
//! in front of a persistent queue.

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::budget::{ByteBudget, Reservation};
use super::Profiles;
/// What a processor did with a batch.
pub enum Processed {
    /// Passed it on, changed or not (shared, as the exporters take it).
    Passed(Arc<Profiles>),
    /// Held it; these batches (maybe none) are let go now.
    Held(Vec<Profiles>),
}

/// A processor's runtime, driven by the pipeline's drain task.
pub trait Processor: Send {
    fn process(&mut self, batch: Profiles) -> Processed;

    /// Lets go of everything held (its deadline passed, or the pipeline
    /// is stopping).
    fn flush(&mut self) -> Vec<Profiles> {
        Vec::new()
    }

    /// When what it holds must be flushed, if it holds anything.
    fn deadline(&self) -> Option<std::time::Instant> {
        None
    }

    /// Whether it holds nothing.
    fn is_empty(&self) -> bool {
        true
    }

    /// What it refuses at the pipeline's intake, for a processor that
    /// refuses data before it is queued (`memory_limiter`).
    fn gate(&self) -> Option<Arc<dyn super::Gate>> {
        None
    }
}

/// A batch on its way through the processors, with what it holds.
pub(super) struct InFlight {
    pub batch: Arc<Profiles>,
    pub hold: Arc<Reservation>,
    /// Told whether the exporters took it.
    pub confirms: Vec<oneshot::Sender<bool>>,
}

/// One stage of the chain, with the budget a batch processor holds.
pub(super) struct Stage {
    processor: Box<dyn Processor>,
    held: Vec<Arc<Reservation>>,
}

impl Stage {
    pub fn new(processor: Box<dyn Processor>) -> Self {
        Self {
            processor,
            held: Vec::new(),
        }
    }

    /// When this stage must be flushed, if it holds anything.
    pub fn deadline(&self) -> Option<Instant> {
        self.processor.deadline().map(Instant::from_std)
    }
}

/// Runs `items` through the stages from `first` on; returns what comes out.
pub(super) fn run(
    stages: &mut [Stage],
    first: usize,
    mut items: Vec<InFlight>,
    budget: &Arc<ByteBudget>,
) -> Vec<InFlight> {
    for stage in stages.iter_mut().skip(first) {
        let mut out = Vec::new();
        for item in items {
            match stage.processor.process(owned(item.batch)) {
                Processed::Passed(batch) => out.push(InFlight {
                    batch,
                    hold: item.hold,
                    confirms: item.confirms,
                }),
                Processed::Held(ready) => {
                    stage.held.push(item.hold);
                    for confirm in item.confirms {
                        let _ = confirm.send(true);
                    }
                    out.extend(release(stage, ready, budget));
                }
            }
        }
        items = out;
    }
    items
}

/// Flushes stage `index` (its timer fired, or the pipeline is stopping) and
/// runs what it held through the stages after it.
pub(super) fn flush(stages: &mut [Stage], index: usize, budget: &Arc<ByteBudget>) -> Vec<InFlight> {
    let Some(stage) = stages.get_mut(index) else {
        return Vec::new();
    };
    let flushed = stage.processor.flush();
    let items = release(stage, flushed, budget);
    run(stages, index + 1, items, budget)
}

/// Batches a batch processor let go. Each holds budget for itself; once the
/// processor holds nothing more, what its inputs held is let go.
fn release(stage: &mut Stage, ready: Vec<Profiles>, budget: &Arc<ByteBudget>) -> Vec<InFlight> {
    let empty = stage.processor.is_empty();
    let out: Vec<InFlight> = ready
        .into_iter()
        .map(|batch| InFlight {
            hold: Arc::new(budget.reserve_forced(batch.memory_size)),
            batch: Arc::new(batch),
            confirms: Vec::new(),
        })
        .collect();
    if empty {
        stage.held.clear();
    }
    out
}

fn owned(batch: Arc<Profiles>) -> Profiles {
    Arc::try_unwrap(batch).unwrap_or_else(|shared| (*shared).clone())
}
