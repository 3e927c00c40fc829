//! The `zpages` extension, end to end: a collector receives profiles, one
//! request it refuses and an exporter that fails; a real browser (Debian's
//! chromium, headless) then loads the pages, following their links, and
//! the text it renders must show the pipeline, its components and the
//! counts that `/metrics` serves and the test sent. Screenshots are kept
//! under `target/tmp/zpages-screenshots/`. Without chromium the browser
//! test skips loudly (fails under `PROFBRIDGE_REQUIRE_INTEROP=1`); the
//! pages are also read over plain HTTP, which needs nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use profbridge_testkit::{ebpf_like_request, require_tool, TempDir};
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use prost::Message;

use crate::support::http::{exchange, get};
use crate::support::in_process::InProcess;

/// The longest any condition is waited for before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);
/// The longest one chromium run may take before it is killed.
const BROWSER_PATIENCE: Duration = Duration::from_secs(120);

/// An exporter id that would be markup if it were not escaped.
const MARKUP_EXPORTER: &str = "nop/<b>bold & \"quoted\"";
const PIPELINE: &str = "profiles/main & <more>";

/// A port nothing listens on.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// OTLP HTTP into one pipeline with a batch processor and three
/// exporters: nop, nop under a name full of markup, and an OTLP HTTP
/// exporter to a closed port that gives up at once.
fn config() -> String {
    let yaml_quoted = |text: &str| format!("'{text}'");
    format!(
        "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:0\n\
         processors:\n  batch:\n    timeout: 10ms\n\
         exporters:\n  nop:\n  {}:\n  otlphttp/down:\n    endpoint: http://127.0.0.1:{}\n    retry_on_failure:\n      enabled: false\n\
         extensions:\n  zpages:\n    endpoint: 127.0.0.1:0\n\
         service:\n  extensions: [zpages]\n  pipelines:\n    {}:\n      receivers: [otlp]\n      processors: [batch]\n      exporters: [nop, {}, otlphttp/down]\n\
         \x20 telemetry:\n    metrics:\n      address: 127.0.0.1:0\n",
        yaml_quoted(MARKUP_EXPORTER),
        closed_port(),
        yaml_quoted(PIPELINE),
        yaml_quoted(MARKUP_EXPORTER),
    )
}

fn post(address: SocketAddr, body: &[u8]) -> u16 {
    let head = format!(
        "POST /v1development/profiles HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    exchange(address, &head, body).0
}

fn profile_count(request: &ExportProfilesServiceRequest) -> u64 {
    request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .map(|s| s.profiles.len() as u64)
        .sum()
}

/// The value of the series `series` (name and labels, as printed).
fn metric(metrics: &str, series: &str) -> Option<u64> {
    metrics.lines().find_map(|line| {
        let (name, number) = line.rsplit_once(' ')?;
        (name == series).then(|| number.parse().unwrap())
    })
}

const ACCEPTED: &str =
    "profbridge_receiver_accepted_profiles_total{receiver=\"otlp\",transport=\"http\"}";
const REFUSED_INVALID: &str = "profbridge_receiver_refused_requests_total{receiver=\"otlp\",transport=\"http\",reason=\"invalid\"}";
const SENT_NOP: &str = "profbridge_exporter_sent_profiles_total{exporter=\"nop\"}";
const FAILED_DOWN: &str =
    "profbridge_exporter_send_failed_profiles_total{exporter=\"otlphttp/down\"}";

/// Whether every queue, the pipelines' and the exporters', is empty:
/// then no figure changes any more.
fn all_empty(metrics: &str) -> bool {
    let levels = [
        "profbridge_exporter_queue_size{",
        "profbridge_exporter_queue_size_bytes{",
        "profbridge_pipeline_queue_size_bytes{",
    ];
    let mut seen = 0;
    for line in metrics.lines() {
        if levels.iter().any(|level| line.starts_with(level)) {
            seen += 1;
            if !line.ends_with(" 0") {
                return false;
            }
        }
    }
    assert!(seen >= levels.len(), "no queue levels in:\n{metrics}");
    true
}

/// What the test sent, and what `/metrics` counted of it.
struct Sent {
    profiles: u64,
    metrics: String,
}

/// Sends three valid requests and one that is not protobuf; waits until
/// every exporter has dealt with every profile, and checks `/metrics`
/// counted what was sent.
fn send_and_settle(collector: &InProcess) -> Sent {
    let http = collector.http.unwrap();
    let mut profiles = 0;
    for seed in 1..=3 {
        let request = ebpf_like_request(20, seed);
        profiles += profile_count(&request);
        assert_eq!(post(http, &request.encode_to_vec()), 200);
    }
    assert_eq!(post(http, b"\xffnot a protobuf message"), 400);
    let telemetry = collector.telemetry.unwrap();
    let started = Instant::now();
    let metrics = loop {
        let (status, metrics) = get(telemetry, "/metrics");
        assert_eq!(status, 200);
        if metric(&metrics, SENT_NOP) == Some(profiles)
            && metric(&metrics, FAILED_DOWN) == Some(profiles)
            && all_empty(&metrics)
        {
            break metrics;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "the exporters never finished:\n{metrics}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(metric(&metrics, ACCEPTED), Some(profiles), "{metrics}");
    assert_eq!(metric(&metrics, REFUSED_INVALID), Some(1), "{metrics}");
    Sent { profiles, metrics }
}

// ---------------------------------------------------------------------------
// Reading a page: its text, table rows and links, from the DOM chromium
// dumps (or the HTML the server sends).

fn decode_entities(text: &str) -> String {
    text.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Elements that do not break a line of text.
const INLINE: [&str; 6] = ["a", "b", "small", "code", "span", "i"];

/// Text without tags, entities decoded, whitespace collapsed.
fn text_of(html: &str) -> String {
    let mut text = String::new();
    let mut tag: Option<String> = None;
    for c in html.chars() {
        match (&mut tag, c) {
            (None, '<') => tag = Some(String::new()),
            (Some(name), '>') => {
                let name = name.trim_start_matches('/');
                let name = name.split_whitespace().next().unwrap_or("");
                if !INLINE.contains(&name) {
                    text.push(' ');
                }
                tag = None;
            }
            (Some(name), c) => name.push(c),
            (None, c) => text.push(c),
        }
    }
    decode_entities(&text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The body's text, without the `<style>` sheet.
fn page_text(html: &str) -> String {
    let body = html.split_once("<body").map_or(html, |(_, body)| body);
    text_of(body)
}

/// Every table row, as the text of its cells.
fn rows(html: &str) -> Vec<Vec<String>> {
    html.split("<tr")
        .skip(1)
        .filter_map(|row| row.split_once('>')?.1.split_once("</tr>"))
        .map(|(row, _)| row)
        .map(|row| {
            let row = row.replace("</td>", "\u{1}").replace("</th>", "\u{1}");
            let mut cells: Vec<String> = row.split('\u{1}').map(text_of).collect();
            cells.pop();
            cells
        })
        .collect()
}

/// The row whose first cell is `first`.
fn row<'a>(rows: &'a [Vec<String>], first: &str) -> &'a [String] {
    rows.iter()
        .find(|row| row.first().is_some_and(|cell| cell == first))
        .unwrap_or_else(|| panic!("no row {first:?} in {rows:#?}"))
}

/// The cell under `column` in `row`, by the header row above it.
fn cell<'a>(rows: &'a [Vec<String>], header_first: &str, first: &str, column: &str) -> &'a str {
    let header_at = rows
        .iter()
        .position(|row| row.first().is_some_and(|cell| cell == header_first))
        .unwrap_or_else(|| panic!("no header row {header_first:?} in {rows:#?}"));
    let header = &rows[header_at];
    let at = header
        .iter()
        .position(|head| head == column)
        .unwrap_or_else(|| panic!("no column {column:?} in {header:?}"));
    let found = rows[header_at + 1..]
        .iter()
        .take_while(|row| row.first().is_none_or(|cell| cell != header_first))
        .find(|row| row.first().is_some_and(|cell| cell == first))
        .unwrap_or_else(|| panic!("no row {first:?} under {header:?} in {rows:#?}"));
    &found[at]
}

/// Every link: (href with entities decoded, its text).
fn links(html: &str) -> Vec<(String, String)> {
    html.split("<a ")
        .skip(1)
        .filter_map(|link| {
            let (_, after) = link.split_once("href=\"")?;
            let (href, rest) = after.split_once('"')?;
            let (_, rest) = rest.split_once('>')?;
            let (label, _) = rest.split_once("</a>")?;
            Some((decode_entities(href), text_of(label)))
        })
        .collect()
}

fn link_to(html: &str, label: &str, under: &str) -> String {
    links(html)
        .into_iter()
        .find(|(href, text)| text == label && href.starts_with(under))
        .map(|(href, _)| href)
        .unwrap_or_else(|| panic!("no link {label:?} in {:?}", links(html)))
}

/// Each figure row (figure, value, series) shows the value `/metrics`
/// has for the series it names; `expected` rows in all.
fn agrees_with_metrics(table: &[Vec<String>], metrics: &str, expected: usize) {
    let figures: Vec<_> = table
        .iter()
        .skip_while(|row| row.first().is_none_or(|cell| cell != "Figure"))
        .skip(1)
        .take_while(|row| row.len() == 3)
        .collect();
    assert_eq!(figures.len(), expected, "{table:#?}");
    for figure in figures {
        assert_eq!(
            metric(metrics, &figure[2]),
            Some(number(&figure[1])),
            "the page shows another value than /metrics for {figure:?}"
        );
    }
}

/// Each row of "Every series" (series, value) shows what `/metrics` has
/// for it; at least `least` rows.
fn every_series_agrees(table: &[Vec<String>], metrics: &str, least: usize) {
    let series: Vec<_> = table
        .iter()
        .skip_while(|row| row.first().is_none_or(|cell| cell != "Series"))
        .skip(1)
        .take_while(|row| row.len() == 2)
        .collect();
    assert!(series.len() >= least, "{table:#?}");
    for row in series {
        assert_eq!(
            metric(metrics, &row[0]),
            Some(number(&row[1])),
            "the page shows another value than /metrics for {row:?}"
        );
    }
}

fn number(text: &str) -> u64 {
    text.parse()
        .unwrap_or_else(|_| panic!("{text:?} is not a count"))
}

// ---------------------------------------------------------------------------
// The browser.

struct Chromium {
    program: PathBuf,
    profile: TempDir,
}

impl Chromium {
    fn find() -> Option<Self> {
        let program = require_tool(
            "chromium",
            &["--version"],
            "the zpages test (Debian package chromium: a real browser renders the pages)",
        )?;
        Some(Self {
            program,
            profile: TempDir::new("zpages-chromium"),
        })
    }

    /// Runs headless chromium with `extra` on `url`; returns its stdout.
    fn run(&self, extra: &[&str], url: &str) -> String {
        let mut child = Command::new(&self.program)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
            ])
            .arg(format!("--user-data-dir={}", self.profile.path().display()))
            .args(extra)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let reading = std::thread::spawn(move || {
            let mut out = String::new();
            let _ = stdout.read_to_string(&mut out);
            out
        });
        let reading_errors = std::thread::spawn(move || {
            let mut out = String::new();
            let _ = stderr.read_to_string(&mut out);
            out
        });
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > BROWSER_PATIENCE {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish with {url}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let out = reading.join().unwrap();
        let errors = reading_errors.join().unwrap();
        assert!(status.success(), "chromium on {url}: {status}\n{errors}");
        out
    }

    /// The DOM chromium built from `url`, serialized.
    fn dom(&self, url: &str) -> String {
        let dom = self.run(&["--dump-dom"], url);
        assert!(dom.contains("</html>"), "no page from {url}: {dom:?}");
        dom
    }

    fn screenshot(&self, url: &str, path: &Path) {
        let _ = std::fs::remove_file(path);
        self.run(
            &[
                &format!("--screenshot={}", path.display()),
                "--window-size=1200,900",
                "--hide-scrollbars",
            ],
            url,
        );
        let written = std::fs::read(path).unwrap_or_default();
        assert!(
            written.starts_with(b"\x89PNG"),
            "chromium wrote no PNG at {}",
            path.display()
        );
    }
}

fn screenshot_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("zpages-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_browser_shows_each_pipeline_and_component_with_what_flowed() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let collector = InProcess::start("zpages-browser", &config());
    let sent = send_and_settle(&collector);
    let zpages = collector.address("zpages");
    let base = format!("http://{zpages}");
    let shots = screenshot_dir();

    // Every pipeline, its components and totals.
    let overview = chromium.dom(&format!("{base}/debug/pipelinez"));
    let table = rows(&overview);
    let pipeline = row(&table, PIPELINE);
    let column = |name: &str| cell(&table, "Pipeline", PIPELINE, name).to_owned();
    assert_eq!(column("Receivers"), "otlp");
    assert_eq!(column("Processors"), "batch");
    assert_eq!(
        column("Exporters"),
        format!("nop, {MARKUP_EXPORTER}, otlphttp/down")
    );
    assert_eq!(number(&column("Accepted profiles")), sent.profiles);
    assert_eq!(number(&column("Refused requests")), 1);
    // nop and the other nop sent each; the closed port failed each.
    assert_eq!(number(&column("Sent profiles")), 2 * sent.profiles);
    assert_eq!(number(&column("Failed profiles")), sent.profiles);
    assert!(number(&column("Recent errors")) >= 2, "{pipeline:?}");
    assert!(
        !overview.contains("<b>bold"),
        "a name from the configuration became markup"
    );
    chromium.screenshot(
        &format!("{base}/debug/pipelinez"),
        &shots.join("pipelinez.png"),
    );

    // The pipeline's page, reached by its link.
    let pipeline_url = format!("{base}{}", link_to(&overview, PIPELINE, "/debug/pipelinez"));
    let page = chromium.dom(&pipeline_url);
    let text = page_text(&page);
    assert!(text.contains(&format!("Pipeline {PIPELINE}")), "{text}");
    let table = rows(&page);
    let receiver = |name: &str| cell(&table, "Receiver", "otlp", name).to_owned();
    assert_eq!(receiver("Type"), "otlp");
    assert_eq!(receiver("Transports"), "http");
    assert_eq!(number(&receiver("Accepted profiles")), sent.profiles);
    assert_eq!(number(&receiver("Refused requests")), 1);
    assert_eq!(cell(&table, "Processor", "batch", "Type"), "batch");
    let exporter = |id: &str, name: &str| cell(&table, "Exporter", id, name).to_owned();
    assert_eq!(number(&exporter("nop", "Sent profiles")), sent.profiles);
    assert_eq!(
        number(&exporter(MARKUP_EXPORTER, "Sent profiles")),
        sent.profiles
    );
    assert_eq!(
        number(&exporter("otlphttp/down", "Send failed profiles")),
        sent.profiles
    );
    let capacity = metric(
        &sent.metrics,
        "profbridge_exporter_queue_capacity{exporter=\"nop\"}",
    )
    .unwrap();
    let queued = exporter("nop", "Queued requests");
    assert!(queued.ends_with(&format!(" of {capacity}")), "{queued}");
    // The recent errors: the refusal and the failed exports.
    assert!(
        table
            .iter()
            .any(|row| row.first().map(String::as_str) == Some("otlp")
                && row
                    .last()
                    .is_some_and(|m| m.starts_with("invalid (http): "))),
        "no refusal among the recent errors: {table:#?}"
    );
    assert!(
        table.iter().any(
            |row| row.first().map(String::as_str) == Some("otlphttp/down")
                && row
                    .last()
                    .is_some_and(|m| m.starts_with("export of ") && m.contains("failed"))
        ),
        "no failed export among the recent errors: {table:#?}"
    );
    chromium.screenshot(&pipeline_url, &shots.join("pipeline.png"));

    // The receiver's page: each figure with its metric, as /metrics has it.
    let receiver_url = format!("{base}{}", link_to(&page, "otlp", "/debug/pipelinez"));
    let page = chromium.dom(&receiver_url);
    assert!(page_text(&page).contains("Receiver otlp"));
    let table = rows(&page);
    assert_eq!(number(&row(&table, "Accepted profiles")[1]), sent.profiles);
    agrees_with_metrics(&table, &sent.metrics, 8);
    every_series_agrees(&table, &sent.metrics, 8);
    assert_eq!(number(&row(&table, "Refused requests: invalid")[1]), 1);
    assert_eq!(number(&row(&table, "Refused profiles: unavailable")[1]), 0);
    let text = page_text(&page);
    assert!(text.contains("1 error since the start"), "{text}");
    chromium.screenshot(&receiver_url, &shots.join("receiver.png"));

    // The failing exporter's page: its count, queue and error.
    let exporter_url = format!(
        "{base}{}",
        link_to(&overview, "otlphttp/down", "/debug/pipelinez")
    );
    let page = chromium.dom(&exporter_url);
    let table = rows(&page);
    assert_eq!(
        number(&row(&table, "Send failed profiles")[1]),
        sent.profiles
    );
    agrees_with_metrics(&table, &sent.metrics, 5);
    // The counters, and the queue's gauges, which do not change now.
    every_series_agrees(&table, &sent.metrics, 9);
    let capacity = metric(
        &sent.metrics,
        "profbridge_exporter_queue_capacity{exporter=\"otlphttp/down\"}",
    )
    .unwrap();
    assert_eq!(number(&row(&table, "Queued requests")[2]), capacity);
    let text = page_text(&page);
    assert!(text.contains("Exporter otlphttp/down"), "{text}");
    assert!(text.contains("export of "), "{text}");
    chromium.screenshot(&exporter_url, &shots.join("exporter.png"));

    // The exporter whose name is markup: shown as text, linked correctly.
    let markup_url = format!(
        "{base}{}",
        link_to(&overview, MARKUP_EXPORTER, "/debug/pipelinez")
    );
    let page = chromium.dom(&markup_url);
    assert!(
        page_text(&page).contains(&format!("Exporter {MARKUP_EXPORTER}")),
        "{}",
        page_text(&page)
    );
    assert!(!page.contains("<b>bold"), "{page}");
    assert_eq!(
        number(&row(&rows(&page), "Sent profiles")[1]),
        sent.profiles
    );

    // The service and the extensions.
    let page = chromium.dom(&format!("{base}/debug/servicez"));
    let table = rows(&page);
    assert_eq!(row(&table, "State")[1], "ready");
    assert_eq!(row(&table, "Command")[1], "profbridge");
    let page = chromium.dom(&format!("{base}/debug/extensionz"));
    assert_eq!(
        cell(&rows(&page), "Extension", "zpages", "Listens on"),
        "endpoint: 127.0.0.1:0"
    );
    chromium.screenshot(
        &format!("{base}/debug/servicez"),
        &shots.join("servicez.png"),
    );
    println!("zpages screenshots: {}", shots.display());

    let (drained, _) = collector.stop();
    assert!(drained);
}

#[test]
fn pages_answer_at_the_collectors_paths_and_nowhere_else() {
    let collector = InProcess::start("zpages-paths", &config());
    let zpages = collector.address("zpages");
    for path in [
        "/debug/servicez",
        "/debug/pipelinez",
        "/debug/extensionz",
        "/debug/featurez",
        "/debug/extensionz?zextensionname=zpages",
    ] {
        let (status, body) = get(zpages, path);
        assert_eq!(status, 200, "{path}: {body}");
        assert!(body.starts_with("<!DOCTYPE html>"), "{path}: {body}");
    }
    // Not in profbridge: a page that says so, and 404.
    for path in ["/debug/tracez", "/debug/rpcz", "/debug/expvarz"] {
        let (status, body) = get(zpages, path);
        assert_eq!(status, 404, "{path}");
        assert!(
            page_text(&body).contains(&format!("{path} is not available in profbridge")),
            "{path}: {body}"
        );
    }
    assert_eq!(get(zpages, "/").0, 404);
    assert_eq!(get(zpages, "/debug/servicez/more").0, 404);
    // Unknown pipelines and components: 404, their names escaped.
    let (status, body) = get(zpages, "/debug/pipelinez?pipelinenamez=%3Cb%3Enone");
    assert_eq!(status, 404);
    assert!(page_text(&body).contains("No pipeline is named \"<b>none\""));
    assert!(!body.contains("<b>none"), "{body}");
    let (status, body) = get(
        zpages,
        "/debug/pipelinez?pipelinenamez=profiles%2Fmain%20%26%20%3Cmore%3E&componentnamez=nop&componentkindz=receiver",
    );
    assert_eq!(status, 404, "{body}");
    assert!(page_text(&body).contains("has no receiver \"nop\""));
    // Without componentkindz, the kind is found.
    let (status, body) = get(
        zpages,
        "/debug/pipelinez?pipelinenamez=profiles%2Fmain%20%26%20%3Cmore%3E&componentnamez=batch",
    );
    assert_eq!(status, 200, "{body}");
    let text = page_text(&body);
    assert!(text.contains("Processor batch"), "{text}");
    // A processor's own counters are the samples in and out.
    assert!(
        text.contains("profbridge_processor_incoming_samples_total{processor=\"batch\"}"),
        "{text}"
    );
    assert!(
        text.contains(
            "otelcol_processor_outgoing_items{processor=\"batch\",otel_signal=\"profiles\"}"
        ),
        "{text}"
    );
    let (drained, _) = collector.stop();
    assert!(drained);
}
