//! `spawn!(task(args…))` inside a region body, rewritten into a call of the task's spawn function.

use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, ExprCall, Stmt};

use crate::model::Errors;

/// Rewrites every `spawn!(task(args…))` into a call of the task's spawn function, numbering the
/// task kinds in order of first appearance.
#[derive(Default)]
pub struct Spawns {
    /// The task paths, by kind.
    pub kinds: Vec<syn::Path>,
    pub errors: Errors,
}

impl Spawns {
    fn rewrite(&mut self, mac: &syn::Macro) -> Option<Expr> {
        if !mac.path.is_ident("spawn") {
            return None;
        }
        let span = mac.span();
        let call: ExprCall = match syn::parse2(mac.tokens.clone()) {
            Ok(call) => call,
            Err(_) => {
                self.errors.push(
                    mac.tokens.span(),
                    "expected a task call, as in `spawn!(task(a, i, j))`",
                );
                return Some(syn::parse_quote!(()));
            }
        };
        let Expr::Path(func) = &*call.func else {
            self.errors.push(
                call.func.span(),
                "expected the name of a `#[task]` function",
            );
            return Some(syn::parse_quote!(()));
        };
        let path = func.path.clone();
        let key = quote!(#path).to_string();
        let kind = match self
            .kinds
            .iter()
            .position(|k| quote!(#k).to_string() == key)
        {
            Some(kind) => kind,
            None => {
                self.kinds.push(path.clone());
                self.kinds.len() - 1
            }
        } as u32;
        // The task's arguments keep the parentheses of the user's call, so that rustc's errors
        // and suggestions about them point into the user's code.
        let args = call.args.iter();
        let mut args =
            proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, quote!(#(#args),*));
        args.set_span(call.paren_token.span.join());
        let method = syn::Ident::new("__tw_spawn", call.func.span());
        Some(
            syn::parse2(
                quote_spanned!(span=> #path::__tw_spawner(__tw_rec, #kind).#method #args ?),
            )
            .expect("a call expression"),
        )
    }
}

impl VisitMut for Spawns {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        if let Expr::Macro(m) = expr
            && let Some(new) = self.rewrite(&m.mac)
        {
            *expr = new;
            return;
        }
        syn::visit_mut::visit_expr_mut(self, expr);
    }

    fn visit_stmt_mut(&mut self, stmt: &mut Stmt) {
        if let Stmt::Macro(m) = stmt
            && let Some(new) = self.rewrite(&m.mac)
        {
            *stmt = Stmt::Expr(new, Some(syn::Token![;](m.span())));
            return;
        }
        syn::visit_mut::visit_stmt_mut(self, stmt);
    }
}
