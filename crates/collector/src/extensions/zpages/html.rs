//! Pages as plain HTML with inline CSS. Text reaches a page only through
//! [`Markup`], which escapes it: component and pipeline names come from
//! the configuration.

use std::fmt::Write;

/// A piece of HTML that is safe to put on a page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Markup(String);

impl Markup {
    /// `text`, escaped.
    pub fn text(text: &str) -> Self {
        Self(escape(text))
    }

    /// A count, right-aligned by the table.
    pub fn number(value: u64) -> Self {
        Self(value.to_string())
    }

    /// A byte count with its size in binary units beside it.
    pub fn bytes(value: u64) -> Self {
        Self(format!("{value} <small>({})</small>", binary_size(value)))
    }

    /// A link to `href` reading `label`.
    pub fn link(href: &Href, label: &str) -> Self {
        Self(format!(
            "<a href=\"{}\">{}</a>",
            escape(&href.0),
            escape(label)
        ))
    }

    /// A time, kept on one line.
    pub fn time(text: &str) -> Self {
        Self(format!("<time>{}</time>", escape(text)))
    }

    /// `text`, escaped, in a `<code>` element.
    pub fn code(text: &str) -> Self {
        Self(format!("<code>{}</code>", escape(text)))
    }

    /// Marked as a problem (red), when `bad`.
    #[must_use]
    pub fn flagged(self, bad: bool) -> Self {
        if bad {
            Self(format!("<span class=\"bad\">{}</span>", self.0))
        } else {
            self
        }
    }

    /// `parts` one after another, separated by `separator` (escaped).
    pub fn join(parts: impl IntoIterator<Item = Self>, separator: &str) -> Self {
        let separator = escape(separator);
        let joined = parts
            .into_iter()
            .map(|part| part.0)
            .collect::<Vec<_>>()
            .join(&separator);
        Self(joined)
    }

    #[cfg(test)]
    fn as_str(&self) -> &str {
        &self.0
    }
}

/// A URL of the zpages: a path and its query, percent-encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Href(String);

impl Href {
    pub fn new(path: &str, query: &[(&str, &str)]) -> Self {
        let mut href = path.to_owned();
        for (i, (key, value)) in query.iter().enumerate() {
            href.push(if i == 0 { '?' } else { '&' });
            href.push_str(&percent_encode(key));
            href.push('=');
            href.push_str(&percent_encode(value));
        }
        Self(href)
    }
}

/// A table: its column heads and rows of cells; columns whose head is in
/// `numeric` are right-aligned.
pub struct Table<'a> {
    pub head: &'a [&'a str],
    pub numeric: &'a [&'a str],
    pub rows: Vec<Vec<Markup>>,
}

/// A page being written.
pub struct Page {
    title: String,
    body: String,
}

impl Page {
    pub fn new(title: &str) -> Self {
        Self {
            title: title.to_owned(),
            body: String::new(),
        }
    }

    /// A section heading.
    pub fn heading(&mut self, text: &str) {
        let _ = write!(self.body, "<h2>{}</h2>", escape(text));
    }

    pub fn paragraph(&mut self, content: &Markup) {
        let _ = write!(self.body, "<p>{}</p>", content.0);
    }

    /// A note in grey.
    pub fn note(&mut self, text: &str) {
        let _ = write!(self.body, "<p class=\"note\">{}</p>", escape(text));
    }

    /// Rows of a name and its value.
    pub fn properties(&mut self, rows: Vec<(&str, Markup)>) {
        self.body.push_str("<table class=\"properties\"><tbody>");
        for (name, value) in rows {
            let _ = write!(
                self.body,
                "<tr><th scope=\"row\">{}</th><td>{}</td></tr>",
                escape(name),
                value.0
            );
        }
        self.body.push_str("</tbody></table>");
    }

    pub fn table(&mut self, table: Table<'_>) {
        let aligned = |head: &str| {
            if table.numeric.contains(&head) {
                " class=\"n\""
            } else {
                ""
            }
        };
        self.body.push_str("<table><thead><tr>");
        for head in table.head {
            let _ = write!(self.body, "<th{}>{}</th>", aligned(head), escape(head));
        }
        self.body.push_str("</tr></thead><tbody>");
        if table.rows.is_empty() {
            let _ = write!(
                self.body,
                "<tr><td colspan=\"{}\" class=\"note\">none</td></tr>",
                table.head.len().max(1)
            );
        }
        for row in table.rows {
            self.body.push_str("<tr>");
            for (cell, head) in row.iter().zip(table.head.iter()) {
                let _ = write!(self.body, "<td{}>{}</td>", aligned(head), cell.0);
            }
            self.body.push_str("</tr>");
        }
        self.body.push_str("</tbody></table>");
    }

    /// The whole document; `footer` is the line under it.
    pub fn finish(self, footer: &str) -> String {
        let title = escape(&self.title);
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{title} · profbridge zPages</title><style>{STYLE}</style></head>\
             <body><nav><b>profbridge zPages</b>\
             <a href=\"/debug/servicez\">Service</a>\
             <a href=\"/debug/pipelinez\">Pipelines</a>\
             <a href=\"/debug/extensionz\">Extensions</a>\
             <a href=\"/debug/featurez\">Features</a></nav>\
             <main><h1>{title}</h1>{}</main><footer>{}</footer></body></html>\n",
            self.body,
            escape(footer)
        )
    }
}

const STYLE: &str = "\
body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1d2330;background:#f6f7f9}\
nav{background:#24304a;padding:10px 24px}\
nav b{color:#fff;margin-right:20px}\
nav a{color:#c9d6f2;margin-right:16px;text-decoration:none}\
nav a:hover{color:#fff}\
main{padding:8px 24px 24px;max-width:1400px}\
h1{font-size:22px;margin:16px 0 8px}\
h2{font-size:16px;margin:22px 0 6px;color:#24304a}\
table{border-collapse:collapse;background:#fff;margin:4px 0 8px;box-shadow:0 1px 2px rgba(0,0,0,.08)}\
th,td{border:1px solid #dde1e8;padding:5px 10px;text-align:left;vertical-align:top}\
thead th{background:#e9edf4;font-weight:600}\
tbody tr:nth-child(even){background:#fafbfc}\
table.properties th{background:#f0f3f8;font-weight:600}\
.n{text-align:right;font-variant-numeric:tabular-nums}\
.bad{color:#b3261e;font-weight:600}\
.note{color:#6b7385}\
small{color:#6b7385}\
time{white-space:nowrap}\
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace}\
a{color:#2456b3}\
footer{padding:0 24px 24px;color:#6b7385;font-size:12px}";

/// `&`, `<`, `>`, `"` and `'` as character references.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// Every byte but the unreserved characters of RFC 3986 as `%XX`.
fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            encoded.push(char::from(byte));
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
}

/// `1.5 MiB`, `512 B`.
fn binary_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = "KiB";
    for next in UNITS.iter().skip(1) {
        if size < 1024.0 {
            break;
        }
        size /= 1024.0;
        unit = next;
    }
    format!("{size:.1} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_links_are_escaped() {
        assert_eq!(
            Markup::text("<b>&\"x\"'</b>").as_str(),
            "&lt;b&gt;&amp;&quot;x&quot;&#39;&lt;/b&gt;"
        );
        let href = Href::new(
            "/debug/pipelinez",
            &[("pipelinenamez", "profiles/<a&b>"), ("x", "é ")],
        );
        assert_eq!(
            Markup::link(&href, "<a>").as_str(),
            "<a href=\"/debug/pipelinez?pipelinenamez=profiles%2F%3Ca%26b%3E&amp;x=%C3%A9%20\">&lt;a&gt;</a>"
        );
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(binary_size(0), "0 B");
        assert_eq!(binary_size(1023), "1023 B");
        assert_eq!(binary_size(1536), "1.5 KiB");
        assert_eq!(binary_size(256 * 1024 * 1024), "256.0 MiB");
    }

    #[test]
    fn rows_get_one_cell_per_column() {
        let mut page = Page::new("T");
        page.table(Table {
            head: &["a", "n"],
            numeric: &["n"],
            rows: vec![vec![Markup::text("x"), Markup::number(3)]],
        });
        let html = page.finish("f");
        assert!(html.contains("<tr><td>x</td><td class=\"n\">3</td></tr>"));
    }
}
