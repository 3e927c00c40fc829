#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The configuration reference (docs/configuration.md) and the operations
//! guide (docs/operations.md) are kept complete by these tests.
//!
//! Every option the config structs accept is found by deserializing each
//! struct with a recording deserializer: it answers `deserialize_struct`
//! with a map holding every field, records each field's key path, and
//! recurses into the values, so nested sections are walked too.
//!
//! The convention configuration.md follows, which `documented_paths` reads:
//!
//! - Under `## Receivers`, `## Processors`, `## Exporters` and
//!   `## Extensions`, a level-3
//!   heading that is just a component type in backticks (`` ### `otlp` ``)
//!   opens that component's section: the rows of the tables below it
//!   document `receivers.otlp.KEY`.
//! - Any heading that holds a full key path in backticks, starting with
//!   `receivers.`, `processors.`, `exporters.`, `extensions.` or `service` (or just
//!   `service`), like `` #### `receivers.otlp.protocols.grpc` ``, documents the keys
//!   under that path; several such paths in one heading share the table,
//!   and `*` stands for every component type (`exporters.*.sending_queue`).
//!   Items of a list are written `KEY[]`.
//! - Any other heading ends the section.
//! - An option table is one whose header's first cell is `key`; the first
//!   cell of each of its rows holds the key, or several keys separated by
//!   commas, each in backticks. Other tables are not read.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, Expected, IntoDeserializer, MapAccess,
    SeqAccess, VariantAccess, Visitor,
};

use profbridge_collector::components::Registry;
use profbridge_collector::config::parse_yaml;
use profbridge_collector::config::{Catalog, Section};
use profbridge_collector::exporters::debug::config::DebugExporterConfig;
use profbridge_collector::exporters::file::config::FileExporterConfig;
use profbridge_collector::exporters::helper::ExporterHelperConfig;
use profbridge_collector::exporters::otlp::config::OtlpExporterConfig;
use profbridge_collector::exporters::otlp_http::config::OtlpHttpExporterConfig;
use profbridge_collector::exporters::pyroscope::config::PyroscopeExporterConfig;
use profbridge_collector::extensions::bearertokenauth::BearerTokenAuthConfig;
use profbridge_collector::extensions::file_storage::FileStorageConfig;
use profbridge_collector::extensions::health_check::HealthCheckConfig;
use profbridge_collector::extensions::pprof::PprofConfig;
use profbridge_collector::extensions::zpages::ZPagesConfig;
use profbridge_collector::pipeline::config::QueueConfig;
use profbridge_collector::processors::memory_limiter::MemoryLimiterConfig;
use profbridge_collector::processors::{BatchProcessorConfig, ResourceProcessorConfig};
use profbridge_collector::receivers::file::config::FileReceiverConfig;
use profbridge_collector::receivers::nop::NopReceiverConfig;
use profbridge_collector::receivers::otlp::config::OtlpReceiverConfig;
use profbridge_collector::receivers::pprof::config::PprofReceiverConfig;
use profbridge_collector::receivers::pyroscope::config::PyroscopeReceiverConfig;
use profbridge_collector::service;
use profbridge_collector::settings::server::{HttpConnectionSettings, HttpServerSettings};
use profbridge_collector::telemetry::config::TelemetryConfig;
use profbridge_testkit::TempDir;

// ---------------------------------------------------------------------------
// The recording deserializer.

/// The placeholder for the keys of a map (`headers.NAME`).
const MAP_KEY: &str = "NAME";

#[derive(Debug)]
struct WalkError {
    message: String,
    /// Whether a field has already been blamed for it (the innermost one).
    blamed: bool,
}

impl fmt::Display for WalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for WalkError {}

impl de::Error for WalkError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self {
            message: message.to_string(),
            blamed: false,
        }
    }
}

#[derive(Default)]
struct State {
    /// Every key path met.
    recorded: BTreeSet<String>,
    /// Fields whose placeholder value a custom impl rejected: left out on
    /// the next walk so that the fields after them are walked too.
    rejected: BTreeSet<String>,
}

#[derive(Clone)]
struct Walker {
    path: String,
    state: Rc<RefCell<State>>,
}

impl Walker {
    fn child(&self, key: &str) -> Self {
        let path = if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        };
        Self {
            path,
            state: Rc::clone(&self.state),
        }
    }

    fn item(&self) -> Self {
        Self {
            path: format!("{}[]", self.path),
            state: Rc::clone(&self.state),
        }
    }
}

/// Every key path under `root` that `T` accepts.
fn walk<T: DeserializeOwned>(root: &str) -> BTreeSet<String> {
    let state = Rc::new(RefCell::new(State::default()));
    for _ in 0..64 {
        let walker = Walker {
            path: root.to_owned(),
            state: Rc::clone(&state),
        };
        let before = state.borrow().rejected.len();
        match T::deserialize(walker) {
            Ok(_) => return state.take().recorded,
            Err(error) => {
                let now = state.borrow().rejected.len();
                assert!(
                    now > before,
                    "walking {root}: {error}, and no field to leave out"
                );
            }
        }
    }
    panic!("walking {root}: still failing after leaving out 64 fields");
}

impl<'de> de::Deserializer<'de> for Walker {
    type Error = WalkError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        // Custom impls (durations, sizes, attribute values) ask for
        // anything; give each what it reads.
        let expecting = format!("{}", &visitor as &dyn Expected);
        if expecting.contains("duration") {
            visitor.visit_str("1s")
        } else if expecting.contains("size") {
            visitor.visit_u64(1)
        } else {
            visitor.visit_str("1s")
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_bool(false)
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_i64(1)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_i64(1)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_i64(1)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_i64(1)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_u64(1)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_u64(1)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_u64(1)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_u64(1)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_f64(1.0)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_f64(1.0)
    }
    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_char('x')
    }
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_str("1s")
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_str("1s")
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_bytes(b"x")
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_bytes(b"x")
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_seq(Items {
            walker: self.item(),
            left: 1,
        })
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        visitor.visit_seq(Items {
            walker: self.item(),
            left: len,
        })
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_map(Fields {
            walker: self,
            keys: vec![MAP_KEY],
            next: 0,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        let keys = {
            let mut state = self.state.borrow_mut();
            for field in fields {
                let path = self.child(field).path;
                state.recorded.insert(path);
            }
            fields
                .iter()
                .copied()
                .filter(|field| !state.rejected.contains(&self.child(field).path))
                .collect()
        };
        visitor.visit_map(Fields {
            walker: self,
            keys,
            next: 0,
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        visitor.visit_enum(Variant {
            walker: self,
            name: variants.first().copied().unwrap_or("unit"),
        })
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_str(MAP_KEY)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_unit()
    }
}

/// A list's items: `left` of them, all at `PATH[]`.
struct Items {
    walker: Walker,
    left: usize,
}

impl<'de> SeqAccess<'de> for Items {
    type Error = WalkError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, WalkError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(self.walker.clone()).map(Some)
    }
}

/// A struct's fields, or a map's single placeholder key.
struct Fields {
    walker: Walker,
    keys: Vec<&'static str>,
    next: usize,
}

impl<'de> MapAccess<'de> for Fields {
    type Error = WalkError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, WalkError> {
        match self.keys.get(self.next) {
            None => Ok(None),
            Some(key) => {
                let key: de::value::StrDeserializer<'_, WalkError> = key.into_deserializer();
                seed.deserialize(key).map(Some)
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, WalkError> {
        let key = self.keys[self.next];
        self.next += 1;
        let child = self.walker.child(key);
        let path = child.path.clone();
        seed.deserialize(child).map_err(|mut error| {
            if !error.blamed {
                error.blamed = true;
                self.walker.state.borrow_mut().rejected.insert(path);
            }
            error
        })
    }
}

/// An enum: its first variant.
struct Variant {
    walker: Walker,
    name: &'static str,
}

impl<'de> EnumAccess<'de> for Variant {
    type Error = WalkError;
    type Variant = Walker;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Walker), WalkError> {
        let name: de::value::StrDeserializer<'_, WalkError> = self.name.into_deserializer();
        Ok((seed.deserialize(name)?, self.walker))
    }
}

impl<'de> VariantAccess<'de> for Walker {
    type Error = WalkError;

    fn unit_variant(self) -> Result<(), WalkError> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, WalkError> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, WalkError> {
        de::Deserializer::deserialize_tuple(self, len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        de::Deserializer::deserialize_struct(self, "", fields, visitor)
    }
}

// ---------------------------------------------------------------------------
// Every option path in the code.

/// The keys of an HTTP listener's embedded settings, under `root`.
fn http_listener(root: &str) -> BTreeSet<String> {
    let mut paths = walk::<HttpServerSettings>(root);
    paths.extend(walk::<HttpConnectionSettings>(root));
    paths
}

fn with_http_listener(mut paths: BTreeSet<String>, root: &str) -> BTreeSet<String> {
    paths.extend(http_listener(root));
    paths
}

fn with_connection(mut paths: BTreeSet<String>, root: &str) -> BTreeSet<String> {
    paths.extend(walk::<HttpConnectionSettings>(root));
    paths
}

fn receiver_paths(kind: &str) -> BTreeSet<String> {
    let root = format!("receivers.{kind}");
    match kind {
        "otlp" => {
            let mut paths = walk::<OtlpReceiverConfig>(&root);
            paths.extend(http_listener(&format!("{root}.protocols.http")));
            paths
        }
        "pprof" => with_http_listener(walk::<PprofReceiverConfig>(&root), &root),
        "pyroscope" => with_http_listener(walk::<PyroscopeReceiverConfig>(&root), &root),
        "file" => walk::<FileReceiverConfig>(&root),
        "nop" => walk::<NopReceiverConfig>(&root),
        _ => panic!("receiver type {kind:?} is new: add its config struct to receiver_paths"),
    }
}

fn processor_paths(kind: &str) -> BTreeSet<String> {
    let root = format!("processors.{kind}");
    match kind {
        "batch" => walk::<BatchProcessorConfig>(&root),
        "resource" => walk::<ResourceProcessorConfig>(&root),
        "memory_limiter" => walk::<MemoryLimiterConfig>(&root),
        _ => panic!("processor type {kind:?} is new: add its config struct to processor_paths"),
    }
}

fn extension_paths(kind: &str) -> BTreeSet<String> {
    let root = format!("extensions.{kind}");
    match kind {
        "health_check" => with_connection(walk::<HealthCheckConfig>(&root), &root),
        "file_storage" => walk::<FileStorageConfig>(&root),
        "bearertokenauth" => walk::<BearerTokenAuthConfig>(&root),
        "pprof" => with_connection(walk::<PprofConfig>(&root), &root),
        "zpages" => with_connection(walk::<ZPagesConfig>(&root), &root),
        _ => panic!("extension type {kind:?} is new: add its config struct to extension_paths"),
    }
}

/// An exporter's own options and the exporter helper's it embeds.
fn embedding_helper<T: serde::de::DeserializeOwned>(root: &str) -> BTreeSet<String> {
    let mut paths = walk::<T>(root);
    paths.extend(walk::<ExporterHelperConfig>(root));
    paths
}

/// An exporter's own options and the client's and helper's it embeds.
fn embedding_client<T: serde::de::DeserializeOwned>(root: &str) -> BTreeSet<String> {
    let mut paths = embedding_helper::<T>(root);
    paths.extend(walk::<profbridge_collector::settings::client::ClientSettings>(root));
    paths
}

fn exporter_paths(kind: &str) -> BTreeSet<String> {
    let root = format!("exporters.{kind}");
    match kind {
        "file" => embedding_helper::<FileExporterConfig>(&root),
        "debug" => embedding_helper::<DebugExporterConfig>(&root),
        // Takes no options (its struct is private to the config model).
        "nop" => BTreeSet::new(),
        "otlp" => embedding_client::<OtlpExporterConfig>(&root),
        "otlphttp" => embedding_client::<OtlpHttpExporterConfig>(&root),
        "pyroscope" => embedding_client::<PyroscopeExporterConfig>(&root),
        _ => panic!("exporter type {kind:?} is new: add its config struct to exporter_paths"),
    }
}

/// The types of a section, as the registry lists them.
fn component_types(section: Section) -> Vec<&'static str> {
    Registry.types(section)
}

/// Every option path the code accepts.
fn code_paths() -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    for kind in component_types(Section::Receivers) {
        paths.extend(receiver_paths(kind));
    }
    for kind in component_types(Section::Processors) {
        paths.extend(processor_paths(kind));
    }
    for kind in component_types(Section::Exporters) {
        paths.extend(exporter_paths(kind));
    }
    for kind in component_types(Section::Extensions) {
        paths.extend(extension_paths(kind));
    }
    paths.extend(walk::<QueueConfig>("service.pipelines.profiles.queue"));
    paths.extend(walk::<TelemetryConfig>("service.telemetry"));
    paths.extend(walk::<HttpConnectionSettings>("service.telemetry.metrics"));
    // FALLBACK, listed by hand: `service` and its pipelines are read by
    // config/parse.rs without a Deserialize struct.
    for key in ["extensions", "pipelines", "telemetry"] {
        paths.insert(format!("service.{key}"));
    }
    for key in ["receivers", "processors", "exporters", "queue"] {
        paths.insert(format!("service.pipelines.profiles.{key}"));
    }
    paths
}

// ---------------------------------------------------------------------------
// What the documentation says.

fn docs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

fn read_doc(name: &str) -> String {
    let path = docs_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text between each pair of backticks.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

const ROOTS: [&str; 5] = [
    "receivers",
    "processors",
    "exporters",
    "extensions",
    "service",
];

/// The key paths documented in configuration.md, by the convention in
/// the module's comment, and the sections (heading paths) it has.
fn documented_paths(doc: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut documented = BTreeSet::new();
    let mut sections = BTreeSet::new();
    let mut component_section: Option<&str> = None;
    let mut prefixes: Vec<String> = Vec::new();
    let mut in_code = false;
    // Inside a table: whether its header's first cell is `key`.
    let mut table: Option<bool> = None;
    for line in doc.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if line.starts_with('#') {
            let level = line.chars().take_while(|&c| c == '#').count();
            let title = line[level..].trim();
            if level <= 2 {
                component_section = match title {
                    "Receivers" => Some("receivers"),
                    "Processors" => Some("processors"),
                    "Exporters" => Some("exporters"),
                    "Extensions" => Some("extensions"),
                    _ => None,
                };
            }
            prefixes = backticked(title)
                .into_iter()
                .filter(|path| {
                    let root = path.split_once('.').map_or(*path, |(root, _)| root);
                    ROOTS.contains(&root)
                })
                .map(str::to_owned)
                .collect();
            if prefixes.is_empty() && level == 3 {
                if let Some(section) = component_section {
                    let kind = title.trim_matches('`');
                    if title.starts_with('`') && title.ends_with('`') && !kind.contains('`') {
                        prefixes.push(format!("{section}.{kind}"));
                    }
                }
            }
            sections.extend(prefixes.iter().cloned());
            continue;
        }
        if !line.starts_with('|') {
            table = None;
            continue;
        }
        let Some(first) = line.split('|').nth(1) else {
            continue;
        };
        let Some(is_options) = table else {
            // The header row says what the table lists.
            table = Some(first.trim() == "key");
            continue;
        };
        if !is_options || prefixes.is_empty() {
            continue;
        }
        for key in backticked(first) {
            for prefix in &prefixes {
                documented.insert(format!("{prefix}.{key}"));
            }
        }
    }
    (documented, sections)
}

/// Whether `documented` names `path`, `*` standing for any one level.
fn matches(documented: &str, path: &str) -> bool {
    let documented: Vec<&str> = documented.split('.').collect();
    let path: Vec<&str> = path.split('.').collect();
    documented.len() == path.len()
        && documented
            .iter()
            .zip(&path)
            .all(|(doc, code)| *doc == "*" || doc == code)
}

#[test]
fn the_walker_finds_nested_options_aliases_and_list_items() {
    let otlp = receiver_paths("otlp");
    for path in [
        "receivers.otlp.protocols",
        "receivers.otlp.protocols.grpc",
        "receivers.otlp.protocols.grpc.max_recv_msg_size_mib",
        "receivers.otlp.protocols.grpc.keepalive.timeout",
        "receivers.otlp.protocols.http.max_request_body_size",
    ] {
        assert!(otlp.contains(path), "{path} not found in {otlp:#?}");
    }
    let file = exporter_paths("file");
    for path in [
        "exporters.file.retention.max_age",
        "exporters.file.sending_queue.storage",
        "exporters.file.sending_queue.block_on_overflow",
        // After sending_queue, whose try_from rejects the placeholders.
        "exporters.file.retry_on_failure.multiplier",
        "exporters.file.dead_letter",
    ] {
        assert!(file.contains(path), "{path} not found in {file:#?}");
    }
    let resource = processor_paths("resource");
    assert!(
        resource.contains("processors.resource.attributes[].from_attribute"),
        "{resource:#?}"
    );
}

#[test]
fn every_option_is_in_the_configuration_reference() {
    let doc = read_doc("configuration.md");
    let (documented, sections) = documented_paths(&doc);
    let missing: Vec<String> = code_paths()
        .into_iter()
        .filter(|path| !documented.iter().any(|doc| matches(doc, path)))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/configuration.md does not document these options ({} of them); give each a row \
         (first cell: the key in backticks) in a table under a heading naming its section, \
         like #### `receivers.otlp.protocols.grpc`:\n  {}",
        missing.len(),
        missing.join("\n  ")
    );
    let mut no_section = Vec::new();
    let kinds = [
        ("receivers", component_types(Section::Receivers)),
        ("processors", component_types(Section::Processors)),
        ("exporters", component_types(Section::Exporters)),
    ];
    for (section, types) in kinds {
        for kind in types {
            let path = format!("{section}.{kind}");
            if !sections.contains(&path) {
                no_section.push(path);
            }
        }
    }
    assert!(
        no_section.is_empty(),
        "docs/configuration.md has no section (### `TYPE` under its ## heading) for: {}",
        no_section.join(", ")
    );
}

#[test]
fn every_option_in_the_configuration_reference_exists() {
    let (documented, _) = documented_paths(&read_doc("configuration.md"));
    let code = code_paths();
    let stale: Vec<&String> = documented
        .iter()
        .filter(|doc| !code.iter().any(|path| matches(doc, path)))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/configuration.md documents options the code does not accept: {stale:?}"
    );
}

#[test]
fn the_convention_reader_understands_the_reference() {
    let header = "| key | default | meaning |\n| --- | --- | --- |\n";
    let doc = format!(
        "## Receivers\n\n### `otlp`\n\n{header}| `protocols` | | x |\n\n\
         #### `receivers.otlp.protocols.grpc`\n\n{header}| `a`, `b` | `1s` | x |\n\n\
         | format | template |\n| --- | --- |\n| `not_a_key` | x |\n\n\
         ## Exporters\n\n### Helper (`exporters.*`)\n\n{header}| `timeout` | | |\n\n\
         ### Other\n\n{header}| `ignored` | | |\n"
    );
    let (documented, sections) = documented_paths(&doc);
    let expected: BTreeSet<String> = [
        "receivers.otlp.protocols",
        "receivers.otlp.protocols.grpc.a",
        "receivers.otlp.protocols.grpc.b",
        "exporters.*.timeout",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(documented, expected);
    assert!(sections.contains("receivers.otlp"));
    assert!(matches("exporters.*.timeout", "exporters.file.timeout"));
    assert!(!matches(
        "exporters.*.timeout",
        "exporters.file.retry.timeout"
    ));
}

// ---------------------------------------------------------------------------
// Metrics.

/// `"profbridge_…"` and `"otelcol_…"` string literals in the collector's
/// sources.
fn metric_names_in_sources() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut pending = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for literal in text.split('"').skip(1).step_by(2) {
                    let prefix = ["profbridge_", "otelcol_"]
                        .into_iter()
                        .find(|prefix| literal.starts_with(prefix));
                    let is_name = prefix.is_some_and(|prefix| literal.len() > prefix.len())
                        && literal
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
                    if is_name {
                        names.insert(literal.to_owned());
                    }
                }
            }
        }
    }
    names
}

/// The metric names of a Prometheus text exposition.
fn metric_names_rendered(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The metrics docs/operations.md lists: first cells of table rows.
fn metric_names_documented(doc: &str) -> BTreeSet<String> {
    doc.lines()
        .filter(|line| line.starts_with('|'))
        .filter_map(|line| line.split('|').nth(1))
        .flat_map(backticked)
        .filter(|name| name.starts_with("profbridge_") || name.starts_with("otelcol_"))
        .map(str::to_owned)
        .collect()
}

fn assert_documented(what: &str, names: &BTreeSet<String>, documented: &BTreeSet<String>) {
    let missing: Vec<&String> = names.difference(documented).collect();
    assert!(
        missing.is_empty(),
        "docs/operations.md has no metric table row for these metrics ({what}): {missing:?}"
    );
}

#[test]
fn every_metric_in_the_sources_is_in_the_operations_guide() {
    let names = metric_names_in_sources();
    assert!(
        names.contains("profbridge_exporter_queue_size"),
        "found {names:?}"
    );
    let documented = metric_names_documented(&read_doc("operations.md"));
    assert_documented("named in crates/collector/src", &names, &documented);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_a_running_collector_serves_is_in_the_operations_guide() {
    let dir = TempDir::new("config-reference");
    let root = dir.path();
    let spool = root.join("spool");
    std::fs::create_dir_all(&spool).unwrap();
    // Every component type that starts without a peer to talk to; the
    // sending exporters connect on their first export only.
    let yaml = format!(
        "receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:0
      http:
        endpoint: 127.0.0.1:0
  pprof:
    endpoint: 127.0.0.1:0
  pyroscope:
    endpoint: 127.0.0.1:0
  file:
    include: [\"{spool}/*.pb.gz\"]
    checkpoint: {root}/file.checkpoint.json
  nop:
processors:
  batch:
  resource:
    attributes:
      - {{key: deployment.environment, value: test, action: upsert}}
  memory_limiter:
    check_interval: 1s
    limit_mib: 1000000
exporters:
  file:
    path: {root}/out
  debug:
  nop:
  otlp:
    endpoint: http://127.0.0.1:1
  otlphttp:
    endpoint: http://127.0.0.1:1
  pyroscope:
    endpoint: http://127.0.0.1:1
service:
  pipelines:
    profiles:
      receivers: [otlp, pprof, pyroscope, file, nop]
      processors: [memory_limiter, resource, batch]
      exporters: [file, debug, nop, otlp, otlphttp, pyroscope]
  telemetry:
    metrics:
      address: \"\"
",
        spool = spool.display(),
        root = root.display(),
    );
    let config = parse_yaml(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    for (section, types) in [
        ("receivers", component_types(Section::Receivers)),
        ("processors", component_types(Section::Processors)),
        ("exporters", component_types(Section::Exporters)),
    ] {
        for kind in types {
            assert!(
                yaml.contains(&format!("\n  {kind}:")),
                "{section}: add the new type {kind:?} to this test's configuration"
            );
        }
    }
    let running = service::start(&config).await.unwrap();
    let rendered = running.metrics.render();
    assert!(running.shutdown(Duration::from_secs(30)).await);
    let names = metric_names_rendered(&rendered);
    assert!(
        names.contains("profbridge_receiver_accepted_profiles_total"),
        "{rendered}"
    );
    let documented = metric_names_documented(&read_doc("operations.md"));
    assert_documented("served by a running collector", &names, &documented);
}
