//! SVG pictures of benchmark results, after Juggler's figures: the speedup per workload and
//! backend (figure 4), the per-worker task-load deviation (figure 5), and the per-worker timeline
//! of one run coloured by task kind (figure 1).

use std::path::Path;

use plotters::prelude::*;
use taskweave::{Backend, Report};

use crate::bench::{self, Measurement, Metric};

type PlotResult = Result<(), Box<dyn std::error::Error>>;

const WIDTH: u32 = 1100;
const HEIGHT: u32 = 520;

/// Grouped bars: for each workload, each label's speedup over `baseline` in `metric`, with a line
/// at 1.
pub fn speedup(all: &[Measurement], baseline: &str, metric: Metric, path: &Path) -> PlotResult {
    let workloads = bench::workloads(all);
    let labels: Vec<String> = bench::labels(all)
        .into_iter()
        .filter(|l| l != baseline)
        .collect();
    let bars: Vec<(usize, usize, f64)> = workloads
        .iter()
        .enumerate()
        .flat_map(|(w, name)| {
            labels.iter().enumerate().filter_map(move |(l, label)| {
                let m = all
                    .iter()
                    .find(|m| m.workload == *name && &m.label == label)?;
                Some((w, l, bench::speedup(all, m, baseline, metric)?))
            })
        })
        .collect();
    let top = bars.iter().map(|b| b.2).fold(1.0f64, f64::max) * 1.15;
    grouped_bars(
        path,
        &format!(
            "Speedup over the {baseline} backend in {} time (higher is better)",
            metric.name()
        ),
        "speedup",
        &workloads,
        &labels,
        &bars,
        top,
        Some(1.0),
    )
}

/// Grouped bars: for each workload, each label's per-worker task-load deviation, in percent.
pub fn load(all: &[Measurement], path: &Path) -> PlotResult {
    let workloads = bench::workloads(all);
    let labels = bench::labels(all);
    let mut bars = Vec::new();
    for (w, name) in workloads.iter().enumerate() {
        for (l, label) in labels.iter().enumerate() {
            let dev = all
                .iter()
                .find(|m| m.workload == *name && &m.label == label)
                .and_then(|m| m.last.as_ref())
                .filter(|r| matches!(r.backend, Backend::Persistent | Backend::Cpu))
                .and_then(bench::load_deviation);
            if let Some(dev) = dev {
                bars.push((w, l, dev));
            }
        }
    }
    let used: Vec<usize> = (0..labels.len())
        .filter(|l| bars.iter().any(|b| b.1 == *l))
        .collect();
    let labels: Vec<String> = used.iter().map(|&l| labels[l].clone()).collect();
    let bars: Vec<(usize, usize, f64)> = bars
        .into_iter()
        .map(|(w, l, d)| (w, used.iter().position(|&u| u == l).unwrap_or(0), d))
        .collect();
    let top = bars.iter().map(|b| b.2).fold(1.0f64, f64::max) * 1.15;
    grouped_bars(
        path,
        "Per-worker task-load deviation (std. dev. of tasks per worker, % of mean)",
        "deviation (%)",
        &workloads,
        &labels,
        &bars,
        top,
        None,
    )
}

#[allow(clippy::too_many_arguments)]
fn grouped_bars(
    path: &Path,
    title: &str,
    y_desc: &str,
    groups: &[&str],
    labels: &[String],
    bars: &[(usize, usize, f64)],
    top: f64,
    reference: Option<f64>,
) -> PlotResult {
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let n = groups.len().max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..n as f64, 0f64..top)?;
    let names: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&|x| {
            let centre = x - x.floor();
            if (centre - 0.5).abs() < 1e-6 {
                names.get(x.floor() as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(y_desc)
        .draw()?;
    let width = 0.8 / labels.len().max(1) as f64;
    for (l, label) in labels.iter().enumerate() {
        let color = Palette99::pick(l).to_rgba();
        chart
            .draw_series(bars.iter().filter(|b| b.1 == l).map(|&(w, l, v)| {
                let x0 = w as f64 + 0.1 + l as f64 * width;
                Rectangle::new([(x0, 0.0), (x0 + width * 0.9, v)], color.filled())
            }))?
            .label(label.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    if let Some(r) = reference {
        chart.draw_series(LineSeries::new(
            [(0.0, r), (n as f64, r)],
            BLACK.stroke_width(1),
        ))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}

/// One row per worker, one bar per task from its start to its end, coloured by task kind
/// (Juggler's figure 1). Needs a traced report.
pub fn timeline(report: &Report, path: &Path) -> PlotResult {
    let trace = report
        .trace
        .as_ref()
        .ok_or("the report has no trace: run with tracing on")?;
    let origin = trace.iter().map(|r| r.start).min().unwrap_or(0);
    let end_us = trace
        .iter()
        .map(|r| (r.end.saturating_sub(origin)) as f64 / 1e3)
        .fold(1e-3f64, f64::max);
    let workers = report.workers.max(1);
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "region `{}` on {} ({}): {} tasks on {} workers",
                report.region,
                report.backend,
                report.policy.name(),
                report.tasks,
                report.workers
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..end_us * 1.02, 0f64..f64::from(workers))?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("time (us)")
        .y_desc("worker")
        .draw()?;
    for (k, kind) in report.kinds.iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        let series = trace.iter().enumerate().filter_map(|(task, r)| {
            let kind_index = report.task_kinds.as_ref()?.get(task).copied()?;
            (kind_index as usize == k).then(|| {
                let (x0, x1) = (
                    (r.start - origin) as f64 / 1e3,
                    (r.end.saturating_sub(origin)) as f64 / 1e3,
                );
                let y = f64::from(r.worker);
                Rectangle::new([(x0, y + 0.1), (x1.max(x0), y + 0.9)], color.filled())
            })
        });
        chart
            .draw_series(series)?
            .label(*kind)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}
