//! The summary for people.

use std::fmt::Write;

use super::source::Origin;
use super::summary::Summary;

pub struct TextReport<'a> {
    pub file: &'a str,
    pub format: &'a str,
    pub origin: Option<&'a Origin>,
    pub summary: &'a Summary,
    pub top: usize,
}

impl TextReport<'_> {
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(origin) = self.origin {
            let _ = writeln!(out, "== {origin} ==");
        }
        let _ = writeln!(out, "File:    {}", self.file);
        let _ = writeln!(out, "Format:  {}", self.format);
        self.sample_types(&mut out);
        let counts = self.summary.counts;
        let _ = writeln!(
            out,
            "Samples: {}   Locations: {}   Functions: {}   Mappings: {}",
            counts.samples, counts.locations, counts.functions, counts.mappings
        );
        self.top_functions(&mut out);
        self.frame_types(&mut out);
        out
    }

    fn sample_types(&self, out: &mut String) {
        if self.summary.sample_types.is_empty() {
            out.push_str("Sample types: none\n");
            return;
        }
        out.push_str("Sample types and totals:\n");
        let rows: Vec<[String; 2]> = self
            .summary
            .sample_types
            .iter()
            .map(|sample_type| {
                let marker = if sample_type.is_default {
                    " [default]"
                } else {
                    ""
                };
                [
                    format!("{}/{}{marker}", sample_type.name, sample_type.unit),
                    with_unit(sample_type.total, &sample_type.unit),
                ]
            })
            .collect();
        let width = rows.iter().map(|[name, _]| name.len()).max().unwrap_or(0);
        for [name, total] in rows {
            let _ = writeln!(out, "  {name:<width$}  {total}");
        }
    }

    fn top_functions(&self, out: &mut String) {
        let Some(selected) = self.summary.selected_type() else {
            return;
        };
        let base = self.summary.percent_base;
        let top = self.summary.top(self.top);
        let _ = writeln!(
            out,
            "\nTop {} of {} functions by {}, in {}:",
            top.len(),
            self.summary.functions.len(),
            selected.name,
            unit_name(&selected.unit)
        );
        let mut running_flat = 0i128;
        let mut rows = vec![["flat", "flat%", "sum%", "cum", "cum%"].map(str::to_owned)];
        for function in top {
            running_flat += function.flat;
            rows.push([
                function.flat.to_string(),
                percent(function.flat, base),
                percent(running_flat, base),
                function.cum.to_string(),
                percent(function.cum, base),
            ]);
        }
        let widths: Vec<usize> = (0..5)
            .map(|c| {
                rows.iter()
                    .filter_map(|row| row.get(c))
                    .map(String::len)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let names =
            std::iter::once("function").chain(top.iter().map(|function| function.name.as_str()));
        for (row, name) in rows.iter().zip(names) {
            out.push(' ');
            for (cell, width) in row.iter().zip(&widths) {
                let _ = write!(out, " {cell:>width$}");
            }
            let _ = writeln!(out, "  {name}");
        }
    }

    fn frame_types(&self, out: &mut String) {
        let Some(selected) = self.summary.selected_type() else {
            return;
        };
        let _ = writeln!(out, "\n{} by leaf frame type:", selected.name);
        let rows: Vec<[String; 3]> = self
            .summary
            .frame_types
            .iter()
            .map(|(name, value)| {
                [
                    name.clone(),
                    with_unit(*value, &selected.unit),
                    percent(*value, self.summary.percent_base),
                ]
            })
            .collect();
        if rows.is_empty() {
            out.push_str("  (no samples)\n");
        }
        let name_width = rows.iter().map(|[name, ..]| name.len()).max().unwrap_or(0);
        let value_width = rows
            .iter()
            .map(|[_, value, _]| value.len())
            .max()
            .unwrap_or(0);
        for [name, value, share] in rows {
            let _ = writeln!(
                out,
                "  {name:<name_width$}  {value:>value_width$}  {share:>7}"
            );
        }
    }
}

fn with_unit(value: i128, unit: &str) -> String {
    if unit.is_empty() {
        value.to_string()
    } else {
        format!("{value} {unit}")
    }
}

fn unit_name(unit: &str) -> &str {
    if unit.is_empty() {
        "(no unit)"
    } else {
        unit
    }
}

/// `value` as a percentage of `base`, with two decimals, or two significant
/// digits below 1%.
pub fn percent(value: i128, base: i128) -> String {
    if base == 0 {
        return "0%".to_owned();
    }
    let ratio = (value as f64 / base as f64).abs() * 100.0;
    if ratio == 0.0 {
        "0%".to_owned()
    } else if ratio >= 1.0 {
        format!("{ratio:.2}%")
    } else {
        let decimals = (1.0 - ratio.log10().floor()).clamp(0.0, 20.0) as usize;
        format!("{ratio:.decimals$}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_keep_two_significant_digits_when_small() {
        assert_eq!(percent(1, 4), "25.00%");
        assert_eq!(percent(17, 100_000), "0.017%");
        assert_eq!(percent(5, 1000), "0.50%");
        assert_eq!(percent(0, 10), "0%");
        assert_eq!(percent(3, 0), "0%");
        assert_eq!(percent(-5, 10), "50.00%");
    }
}
