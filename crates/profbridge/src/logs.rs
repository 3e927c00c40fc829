//! The collector's own log, set up from `service.telemetry.logs`: level,
//! encoding, `initial_fields` on every line, zap-style sampling, and the
//! output.

use std::collections::HashMap;
use std::fmt;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use tracing::callsite::Identifier;
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use profbridge_collector::telemetry::config::{
    FieldValue, LogEncoding, LogOutput, LogsConfig, SamplingConfig,
};

/// Installs the process-wide logger; the first call wins.
pub fn init(logs: &LogsConfig) -> Result<()> {
    let (writer, terminal) = match logs.output() {
        LogOutput::Stderr => (
            BoxMakeWriter::new(std::io::stderr),
            std::io::stderr().is_terminal(),
        ),
        LogOutput::Stdout => (
            BoxMakeWriter::new(std::io::stdout),
            std::io::stdout().is_terminal(),
        ),
        LogOutput::File(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .with_context(|| {
                    format!(
                        "opening service.telemetry.logs.output_paths {}",
                        path.display()
                    )
                })?;
            (BoxMakeWriter::new(Arc::new(file)), false)
        }
    };
    let fields = InitialFields::new(logs);
    // Lines with initial fields are assembled as text first: no colours.
    let ansi = terminal && fields.is_empty();
    let base = tracing_subscriber::fmt::format().with_target(!logs.disable_caller);
    let output = match logs.encoding {
        LogEncoding::Json => tracing_subscriber::fmt::layer()
            .event_format(WithFields {
                inner: base.json(),
                fields,
            })
            .fmt_fields(JsonFields::new())
            .with_writer(writer)
            .boxed(),
        LogEncoding::Console => tracing_subscriber::fmt::layer()
            .event_format(WithFields {
                inner: base,
                fields,
            })
            .with_ansi(ansi)
            .with_writer(writer)
            .boxed(),
    };
    let _ = tracing_subscriber::registry()
        .with(EnvFilter::new(filter(logs.filter_level())))
        .with(logs.sampling().map(Sampling::new))
        .with(output)
        .try_init();
    Ok(())
}

/// The filter for `level`: at `info`, the CPU sampler's start and stop
/// lines (pprof-rs logs both, and the pprof receiver's `self` source
/// records one interval after another) are left out.
fn filter(level: &str) -> String {
    match level {
        "info" => "info,pprof::profiler=warn".to_owned(),
        level => level.to_owned(),
    }
}

/// `initial_fields`, rendered once for the encoding.
enum InitialFields {
    None,
    /// `"key":value,` pairs to open each JSON object with.
    Json(String),
    /// ` key=value` pairs to end each line with.
    Console(String),
}

impl InitialFields {
    fn new(logs: &LogsConfig) -> Self {
        if logs.initial_fields.is_empty() {
            return Self::None;
        }
        let mut text = String::new();
        for (key, value) in &logs.initial_fields {
            match logs.encoding {
                LogEncoding::Json => {
                    let value = match value {
                        FieldValue::Bool(value) => serde_json::json!(value),
                        FieldValue::Integer(value) => serde_json::json!(value),
                        FieldValue::Float(value) => serde_json::json!(value),
                        FieldValue::Text(value) => serde_json::json!(value),
                    };
                    text.push_str(&format!("{}:{value},", serde_json::json!(key)));
                }
                LogEncoding::Console => {
                    let value = match value {
                        FieldValue::Bool(value) => value.to_string(),
                        FieldValue::Integer(value) => value.to_string(),
                        FieldValue::Float(value) => value.to_string(),
                        FieldValue::Text(value) => format!("{value:?}"),
                    };
                    text.push_str(&format!(" {key}={value}"));
                }
            }
        }
        match logs.encoding {
            LogEncoding::Json => Self::Json(text),
            LogEncoding::Console => Self::Console(text),
        }
    }

    fn is_empty(&self) -> bool {
        matches!(self, Self::None)
    }

    /// `line` (one formatted event, newline included) with the fields.
    fn add_to(&self, line: &str) -> String {
        match self {
            Self::None => line.to_owned(),
            Self::Json(fields) => match line.split_once('{') {
                Some((before, after)) => format!("{before}{{{fields}{after}"),
                None => line.to_owned(),
            },
            Self::Console(fields) => {
                let body = line.strip_suffix('\n').unwrap_or(line);
                format!("{body}{fields}\n")
            }
        }
    }
}

/// An event format that adds the initial fields to what `inner` writes.
struct WithFields<F> {
    inner: F,
    fields: InitialFields,
}

impl<S, N, F> FormatEvent<S, N> for WithFields<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        if self.fields.is_empty() {
            return self.inner.format_event(ctx, writer, event);
        }
        let mut line = String::new();
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        writer.write_str(&self.fields.add_to(&line))
    }
}

/// zap's sampler: per call site (zap: per message and level), the first
/// `initial` events of each `tick`, then every `thereafter`-th.
struct Sampling {
    counts: SampleCounts<Identifier>,
}

impl Sampling {
    fn new(config: &SamplingConfig) -> Self {
        Self {
            counts: SampleCounts {
                tick: config.tick.0,
                initial: config.initial,
                thereafter: config.thereafter,
                seen: Mutex::new(HashMap::new()),
            },
        }
    }
}

impl<S: Subscriber> Layer<S> for Sampling {
    fn event_enabled(&self, event: &Event<'_>, _ctx: Context<'_, S>) -> bool {
        self.counts
            .admits(event.metadata().callsite(), Instant::now())
    }
}

/// Events per key in the current tick.
struct SampleCounts<K> {
    tick: Duration,
    initial: u64,
    thereafter: u64,
    seen: Mutex<HashMap<K, (Instant, u64)>>,
}

impl<K: std::hash::Hash + Eq> SampleCounts<K> {
    fn admits(&self, key: K, now: Instant) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let (started, count) = seen.entry(key).or_insert((now, 0));
        if now.saturating_duration_since(*started) >= self.tick {
            *started = now;
            *count = 0;
        }
        *count += 1;
        *count <= self.initial
            || (self.thereafter > 0 && (*count - self.initial) % self.thereafter == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_keeps_the_first_then_every_nth_per_key_and_tick() {
        let counts = SampleCounts {
            tick: Duration::from_secs(10),
            initial: 2,
            thereafter: 3,
            seen: Mutex::new(HashMap::new()),
        };
        let start = Instant::now();
        let kept: Vec<bool> = (0..8).map(|_| counts.admits("a", start)).collect();
        assert_eq!(kept, [true, true, false, false, true, false, false, true]);
        assert!(counts.admits("b", start), "another call site counts apart");
        assert!(
            counts.admits("a", start + Duration::from_secs(10)),
            "a new tick starts over"
        );
        let none_after = SampleCounts {
            thereafter: 0,
            ..counts
        };
        let start = start + Duration::from_secs(20);
        let kept: Vec<bool> = (0..4).map(|_| none_after.admits("a", start)).collect();
        assert_eq!(kept, [true, true, false, false]);
    }

    #[test]
    fn initial_fields_open_json_objects_and_end_console_lines() {
        let mut logs = LogsConfig::default();
        logs.initial_fields.insert(
            "region".to_owned(),
            FieldValue::Text("eu \"west\"".to_owned()),
        );
        logs.initial_fields
            .insert("shard".to_owned(), FieldValue::Integer(3));
        let console = InitialFields::new(&logs);
        assert_eq!(
            console.add_to("INFO started\n"),
            "INFO started region=\"eu \\\"west\\\"\" shard=3\n"
        );
        logs.encoding = LogEncoding::Json;
        let json = InitialFields::new(&logs);
        let line = json.add_to("{\"level\":\"INFO\"}\n");
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(parsed["region"], "eu \"west\"");
        assert_eq!(parsed["shard"], 3);
        assert_eq!(parsed["level"], "INFO");
    }
}
