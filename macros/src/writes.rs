//! Writes to a read-only array in a task body, found in the syntax so that the error names the
//! parameter and its fix, not the view type rustc would report (`View<'_, f32, __TW_CHECKED>`).
//!
//! A write is `a[i] = …`, `a[i] += …` (any compound assignment) or `&mut a[i]`, with `a` a `&[T]`
//! parameter. A parameter whose name the body binds again (`let a = …`, a closure or `for`
//! pattern) is not checked: the write may be to the new binding. Writes this misses (through a
//! method, a macro) still fail to compile, with rustc's message about the view.

use proc_macro2::Span;
use syn::visit::Visit;
use syn::{BinOp, Expr, Pat};

/// The parameters of `names` written in `block`, with the span of each write.
pub fn written(block: &syn::Block, names: &[&syn::Ident]) -> Vec<(syn::Ident, Span)> {
    let mut bindings = Bindings::default();
    bindings.visit_block(block);
    let checked: Vec<&syn::Ident> = names
        .iter()
        .copied()
        .filter(|name| !bindings.0.contains(name))
        .collect();
    let mut writes = Writes {
        names: &checked,
        found: Vec::new(),
    };
    writes.visit_block(block);
    writes.found
}

/// Every name a pattern in the body binds.
#[derive(Default)]
struct Bindings(Vec<syn::Ident>);

impl Visit<'_> for Bindings {
    fn visit_pat(&mut self, pat: &Pat) {
        if let Pat::Ident(ident) = pat {
            self.0.push(ident.ident.clone());
        }
        syn::visit::visit_pat(self, pat);
    }
}

struct Writes<'a> {
    names: &'a [&'a syn::Ident],
    found: Vec<(syn::Ident, Span)>,
}

impl Writes<'_> {
    /// The checked parameter that `place` indexes, as in `a[i]` or `(a)[i]`.
    fn indexed<'e>(&self, place: &'e Expr) -> Option<&'e syn::Ident> {
        let mut place = place;
        while let Expr::Paren(inner) = place {
            place = &inner.expr;
        }
        let Expr::Index(index) = place else {
            return None;
        };
        let Expr::Path(path) = &*index.expr else {
            return None;
        };
        let ident = path.path.get_ident()?;
        self.names.contains(&ident).then_some(ident)
    }

    fn check(&mut self, place: &Expr, span: Span) {
        if let Some(ident) = self.indexed(place) {
            self.found.push((ident.clone(), span));
        }
    }
}

fn is_compound_assignment(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
    )
}

impl Visit<'_> for Writes<'_> {
    fn visit_expr(&mut self, expr: &Expr) {
        match expr {
            Expr::Assign(assign) => self.check(&assign.left, syn::spanned::Spanned::span(expr)),
            Expr::Binary(binary) if is_compound_assignment(&binary.op) => {
                self.check(&binary.left, syn::spanned::Spanned::span(expr));
            }
            Expr::Reference(reference) if reference.mutability.is_some() => {
                self.check(&reference.expr, syn::spanned::Spanned::span(expr));
            }
            _ => {}
        }
        syn::visit::visit_expr(self, expr);
    }
}
