//! Exporting a [`Dag`] as Graphviz DOT or JSON.

use core::fmt::Write as _;

use serde_json::{Value, json};

use super::{Dag, EdgeKind};

/// Graphviz colour of an edge kind.
fn colour(kind: EdgeKind) -> &'static str {
    match kind {
        EdgeKind::Raw => "black",
        EdgeKind::War => "darkorange",
        EdgeKind::Waw => "red",
    }
}

/// `text` as a DOT double-quoted string.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            _ => out.push(ch),
        }
    }
    out.push('"');
    out
}

impl Dag {
    /// The DAG as a Graphviz `digraph`. Task `t` is node `t<id>` labelled `label(t)`; edges are
    /// labelled with their kind (`raw`, `war`, `waw`) and coloured black, orange and red.
    pub fn to_dot(&self, label: impl Fn(u32) -> String) -> String {
        let mut out = String::from("digraph taskweave {\n  node [shape=box];\n");
        for t in 0..self.task_count() as u32 {
            // Writing into a String cannot fail.
            let _ = writeln!(out, "  t{t} [label={}];", quoted(&label(t)));
        }
        for t in 0..self.task_count() as u32 {
            for (&c, &kind) in self.children_of(t).iter().zip(self.kinds_of(t)) {
                let (name, colour) = (kind.as_str(), colour(kind));
                let style = if kind == EdgeKind::Raw {
                    "solid"
                } else {
                    "dashed"
                };
                let _ = writeln!(
                    out,
                    "  t{t} -> t{c} [label=\"{name}\", color={colour}, fontcolor={colour}, style={style}];"
                );
            }
        }
        out.push_str("}\n");
        out
    }

    /// The DAG as JSON: `{"tasks": [task(0), task(1), ...], "edges": [{"from": p, "to": c,
    /// "kind": "raw"}, ...]}`, edges ordered by parent and then child.
    pub fn to_json(&self, task: impl Fn(u32) -> Value) -> Value {
        let n = self.task_count() as u32;
        let tasks: Vec<Value> = (0..n).map(task).collect();
        let edges: Vec<Value> = (0..n)
            .flat_map(|t| {
                self.children_of(t)
                    .iter()
                    .zip(self.kinds_of(t))
                    .map(move |(&c, &kind)| json!({"from": t, "to": c, "kind": kind.as_str()}))
            })
            .collect();
        json!({"tasks": tasks, "edges": edges})
    }
}

#[cfg(test)]
mod tests {
    use crate::graph::{Access, DepTracker};
    use serde_json::json;

    fn small() -> crate::graph::Dag {
        let mut tracker = DepTracker::new(&[4]);
        tracker.add_task(&[(0, 0..4, Access::Write)]).unwrap();
        tracker.add_task(&[(0, 0..2, Access::Read)]).unwrap();
        tracker.add_task(&[(0, 0..4, Access::Write)]).unwrap();
        tracker.finish().unwrap()
    }

    #[test]
    fn dot_lists_nodes_and_coloured_edges() {
        let dot = small().to_dot(|t| format!("task \"{t}\"\nline"));
        assert!(dot.starts_with("digraph taskweave {\n"));
        assert!(dot.contains("  t0 [label=\"task \\\"0\\\"\\nline\"];\n"));
        assert!(dot.contains("t0 -> t1 [label=\"raw\", color=black"));
        assert!(dot.contains("t0 -> t2 [label=\"waw\", color=red"));
        assert!(dot.contains("t1 -> t2 [label=\"war\", color=darkorange"));
        assert!(dot.ends_with("}\n"));
    }

    #[test]
    fn json_shape() {
        let value = small().to_json(|t| json!({"id": t}));
        assert_eq!(
            value,
            json!({
                "tasks": [{"id": 0}, {"id": 1}, {"id": 2}],
                "edges": [
                    {"from": 0, "to": 1, "kind": "raw"},
                    {"from": 0, "to": 2, "kind": "waw"},
                    {"from": 1, "to": 2, "kind": "war"},
                ],
            })
        );
    }
}
