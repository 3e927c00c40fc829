//! The Prometheus text exposition format, version 0.0.4.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::metrics::{Family, Kind, Registry, Value};

/// The `Content-Type` of [`Registry::render`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

impl Registry {
    /// Everything, in the Prometheus text format 0.0.4: families by name,
    /// series by labels.
    pub fn render(&self) -> String {
        render(&self.families())
    }
}

fn render(families: &BTreeMap<String, Family>) -> String {
    let mut out = String::new();
    for (name, family) in families {
        if family.series.is_empty() {
            continue;
        }
        let kind = match family.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        let _ = writeln!(out, "# HELP {name} {}", escape_help(&family.help));
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (labels, value) in &family.series {
            out.push_str(name);
            if !labels.is_empty() {
                out.push('{');
                for (i, (label, value)) in labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{label}=\"{}\"", escape_label_value(value));
                }
                out.push('}');
            }
            let number = match value {
                Value::Counter(counter) => counter.get().to_string(),
                Value::Read(read) => format_float(read()),
            };
            let _ = writeln!(out, " {number}");
        }
    }
    out
}

/// `\` and line feeds, as HELP text needs.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// `\`, `"` and line feeds, as label values need.
fn escape_label_value(text: &str) -> String {
    escape_help(text).replace('"', "\\\"")
}

fn format_float(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value == f64::INFINITY {
        "+Inf".to_owned()
    } else if value == f64::NEG_INFINITY {
        "-Inf".to_owned()
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::super::metrics::{labels, Registry};
    use super::*;

    #[test]
    fn families_are_sorted_by_name_and_series_by_labels() {
        let registry = Registry::new();
        registry
            .counter("b_total", "Second.", labels(&[("x", "2")]))
            .add(5);
        registry.counter("b_total", "Second.", labels(&[("x", "1")]));
        registry.gauge_fn("a_bytes", "First.", Vec::new(), || 1.5);
        assert_eq!(
            registry.render(),
            "# HELP a_bytes First.\n# TYPE a_bytes gauge\na_bytes 1.5\n\
             # HELP b_total Second.\n# TYPE b_total counter\n\
             b_total{x=\"1\"} 0\nb_total{x=\"2\"} 5\n"
        );
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        let registry = Registry::new();
        registry
            .counter(
                "c_total",
                "a \\ b\nc \"d\"",
                labels(&[("a", "q\"uote"), ("b", "back\\slash\nnew")]),
            )
            .add(1);
        assert_eq!(
            registry.render(),
            "# HELP c_total a \\\\ b\\nc \"d\"\n# TYPE c_total counter\n\
             c_total{a=\"q\\\"uote\",b=\"back\\\\slash\\nnew\"} 1\n"
        );
    }

    #[test]
    fn special_floats_use_the_prometheus_spelling() {
        assert_eq!(format_float(f64::NAN), "NaN");
        assert_eq!(format_float(f64::INFINITY), "+Inf");
        assert_eq!(format_float(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_float(268_435_456.0), "268435456");
        assert_eq!(format_float(0.25), "0.25");
    }

    #[test]
    fn families_without_series_are_left_out() {
        assert_eq!(Registry::new().render(), "");
    }
}
