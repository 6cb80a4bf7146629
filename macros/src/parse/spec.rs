use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, Ident, RangeLimits, Token, bracketed, token};

mod kw {
    syn::custom_keyword!(reads);
    syn::custom_keyword!(writes);
    syn::custom_keyword!(blocks);
}

/// The whole `#[task(…)]` argument list.
pub struct Spec {
    pub entries: Vec<Entry>,
    /// Every `blocks = K`: a wide task's gang width (more than one is an error).
    pub blocks: Vec<Blocks>,
}

/// `blocks = K`.
pub struct Blocks {
    pub value: Expr,
    /// The span of the whole `blocks = K`.
    pub span: Span,
}

/// `reads = …` or `writes = …`.
pub struct Entry {
    pub key: Key,
    pub accesses: Vec<AccessExpr>,
    /// The span of the list (for an empty `[]`).
    pub span: Span,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Reads,
    Writes,
}

/// `a[lo..hi]`, `a[lo..]`, `a[..hi]`, `a[..]` or `a[lo..=hi]`; or `a[f(x)]` with an expression of
/// type `Range<usize>` (a call, method call, block or macro).
pub struct AccessExpr {
    pub array: Ident,
    /// A `Range<usize>`-valued expression instead of range syntax.
    pub range: Option<Expr>,
    pub lo: Option<Expr>,
    pub hi: Option<Expr>,
    pub inclusive: bool,
    /// The span of the whole access, for duplicate reports.
    pub span: Span,
}

impl Parse for Spec {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut spec = Self {
            entries: Vec::new(),
            blocks: Vec::new(),
        };
        while !input.is_empty() {
            if input.peek(kw::blocks) {
                let key = input.parse::<kw::blocks>()?;
                input.parse::<Token![=]>()?;
                let value: Expr = input.parse()?;
                let span = key.span.join(value.span()).unwrap_or(key.span);
                spec.blocks.push(Blocks { value, span });
            } else {
                spec.entries.push(input.parse()?);
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(spec)
    }
}

impl Parse for Entry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let lookahead = input.lookahead1();
        lookahead.peek(kw::blocks);
        let key = if lookahead.peek(kw::reads) {
            input.parse::<kw::reads>()?;
            Key::Reads
        } else if lookahead.peek(kw::writes) {
            input.parse::<kw::writes>()?;
            Key::Writes
        } else {
            return Err(lookahead.error());
        };
        input.parse::<Token![=]>()?;
        if input.peek(token::Bracket) {
            let content;
            let bracket = bracketed!(content in input);
            let list = Punctuated::<AccessExpr, Token![,]>::parse_terminated(&content)?;
            Ok(Self {
                key,
                accesses: list.into_iter().collect(),
                span: bracket.span.join(),
            })
        } else {
            let access: AccessExpr = input.parse()?;
            let span = access.span;
            Ok(Self {
                key,
                accesses: vec![access],
                span,
            })
        }
    }
}

impl Parse for AccessExpr {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let array: Ident = input.parse()?;
        if !input.peek(token::Bracket) {
            return Err(syn::Error::new(
                array.span(),
                format!(
                    "expected a range of `{array}`, such as `{array}[lo..hi]`, or `{array}[..]` for all of it"
                ),
            ));
        }
        let content;
        let bracket = bracketed!(content in input);
        if content.is_empty() {
            return Err(syn::Error::new(
                bracket.span.join(),
                "expected a range `lo..hi` inside the brackets",
            ));
        }
        let index: Expr = content.parse()?;
        if !content.is_empty() {
            return Err(content.error("unexpected tokens after the range"));
        }
        let span = array
            .span()
            .join(bracket.span.join())
            .unwrap_or_else(|| array.span());
        let range = match index {
            Expr::Range(range) => range,
            Expr::Call(_) | Expr::MethodCall(_) | Expr::Block(_) | Expr::Macro(_) => {
                return Ok(Self {
                    array,
                    range: Some(index),
                    lo: None,
                    hi: None,
                    inclusive: false,
                    span,
                });
            }
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "expected a range such as `lo..hi`; for one element write `i..i + 1`",
                ));
            }
        };
        Ok(Self {
            array,
            range: None,
            lo: range.start.map(|e| *e),
            hi: range.end.map(|e| *e),
            inclusive: matches!(range.limits, RangeLimits::Closed(_)),
            span,
        })
    }
}
