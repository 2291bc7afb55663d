//! Line charts as SVG, written by hand (a few polylines, axes and a legend need no plotting
//! library): the soak's memory and cached objects over time.

use std::fmt::Write as _;

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Line {
    pub label: String,
    /// An SVG colour.
    pub color: &'static str,
    pub dashed: bool,
    /// `(x, y)` points, in the order drawn.
    pub points: Vec<(f64, f64)>,
}

/// One panel: a title, the axes' names and its lines.
#[derive(Debug, Clone)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub lines: Vec<Line>,
}

/// Colours for successive series.
pub const COLORS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
];

const WIDTH: f64 = 960.0;
const PANEL: f64 = 360.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 300.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;

/// A round step for about `ticks` ticks over `span`.
fn step(span: f64, ticks: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / ticks;
    let magnitude = 10f64.powf(raw.log10().floor());
    let unit = raw / magnitude;
    let nice = if unit <= 1.0 {
        1.0
    } else if unit <= 2.0 {
        2.0
    } else if unit <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// A tick's label: no decimals where the step has none.
fn tick_label(value: f64, step: f64) -> String {
    if step >= 1.0 {
        format!("{value:.0}")
    } else {
        let decimals = (-step.log10().floor()) as usize;
        format!("{value:.decimals$}")
    }
}

/// Escapes text for SVG.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn panel(out: &mut String, chart: &Chart, top: f64) {
    let points = chart.lines.iter().flat_map(|l| l.points.iter());
    let (mut x_max, mut y_max) = (0f64, 0f64);
    for &(x, y) in points {
        x_max = x_max.max(x);
        y_max = y_max.max(y);
    }
    let (x_step, y_step) = (step(x_max, 8.0), step(y_max, 6.0));
    let x_max = (x_max / x_step).ceil().max(1.0) * x_step;
    let y_max = (y_max / y_step).ceil().max(1.0) * y_step;
    let (w, h) = (WIDTH - LEFT - RIGHT, PANEL - TOP - BOTTOM);
    let sx = |x: f64| LEFT + x / x_max * w;
    let sy = |y: f64| top + TOP + h - y / y_max * h;
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="15" font-weight="bold">{}</text>"#,
        LEFT,
        top + 24.0,
        escape(&chart.title)
    );
    let mut y = 0.0;
    while y <= y_max + y_step / 2.0 {
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            LEFT + w,
            LEFT - 6.0,
            sy(y) + 4.0,
            tick_label(y, y_step),
            py = sy(y),
        );
        y += y_step;
    }
    let mut x = 0.0;
    while x <= x_max + x_step / 2.0 {
        let _ = writeln!(
            out,
            r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#eee"/><text x="{px:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
            top + TOP,
            top + TOP + h,
            top + TOP + h + 16.0,
            tick_label(x, x_step),
            px = sx(x),
        );
        x += x_step;
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
        LEFT + w / 2.0,
        top + PANEL - 12.0,
        escape(&chart.x_label)
    );
    let _ = writeln!(
        out,
        r#"<text x="18" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 18 {:.1})">{}</text>"#,
        top + TOP + h / 2.0,
        top + TOP + h / 2.0,
        escape(&chart.y_label)
    );
    for (i, line) in chart.lines.iter().enumerate() {
        let dash = if line.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let path: Vec<String> = line
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{}" stroke-width="1.6"{dash} points="{}"/>"#,
            line.color,
            path.join(" ")
        );
        let ly = top + TOP + 14.0 + 18.0 * i as f64;
        let lx = LEFT + w + 14.0;
        let _ = writeln!(
            out,
            r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2"{dash}/><text x="{:.1}" y="{ly:.1}" font-size="11">{}</text>"#,
            ly - 4.0,
            lx + 24.0,
            ly - 4.0,
            line.color,
            lx + 30.0,
            escape(&line.label)
        );
    }
}

/// The charts stacked in one SVG document.
pub fn render(charts: &[Chart]) -> String {
    let height = PANEL * charts.len() as f64;
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
"#
    );
    for (i, chart) in charts.iter().enumerate() {
        panel(&mut out, chart, PANEL * i as f64);
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round() {
        assert_eq!(step(30.0, 8.0), 5.0);
        assert_eq!(step(1000.0, 6.0), 200.0);
        assert_eq!(step(0.0, 6.0), 1.0);
    }

    #[test]
    fn a_chart_has_a_line_per_series_and_escaped_labels() {
        let chart = Chart {
            title: "a <b>".into(),
            x_label: "minutes".into(),
            y_label: "MB".into(),
            lines: vec![Line {
                label: "x & y".into(),
                color: COLORS[0],
                dashed: true,
                points: vec![(0.0, 1.0), (1.0, 2.0)],
            }],
        };
        let svg = render(&[chart]);
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert!(svg.contains("a &lt;b&gt;") && svg.contains("x &amp; y"));
        assert!(svg.contains("stroke-dasharray"));
    }
}
