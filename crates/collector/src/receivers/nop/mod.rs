//! `receivers: nop:` starts nothing and feeds nothing: for tests, and a
//! pipeline whose receivers are elsewhere. It takes no options.

use serde::Deserialize;

use crate::component::{ReceiverContext, ReceiverFactory, StartFuture, StartedReceiver};
use crate::settings::Options;

/// No options: `nop:` or `nop: {}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NopReceiverConfig {}

impl Options for NopReceiverConfig {}

pub struct NopReceiverFactory;

impl ReceiverFactory for NopReceiverFactory {
    const KIND: &'static str = "nop";
    type Options = NopReceiverConfig;

    fn start<'a>(
        &'a self,
        _options: &'a NopReceiverConfig,
        _context: ReceiverContext<'a>,
    ) -> StartFuture<'a> {
        Box::pin(async { Ok(StartedReceiver::default()) })
    }
}
