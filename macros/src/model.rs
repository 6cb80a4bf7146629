//! The typed model of a task, and its validation against the function's signature.

use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Expr, FnArg, Ident, ItemFn, Pat, ReturnType, Type};

use crate::parse::{Blocks, Key, Spec};

/// What a task parameter is.
pub enum ParamKind {
    /// `&Block`: the block context.
    Block,
    /// `&[T]` (`writable: false`) or `&mut [T]` (`writable: true`).
    Array { elem: Box<Type>, writable: bool },
    /// Anything else: a captured scalar.
    Scalar,
}

pub struct Param {
    pub ident: Ident,
    pub ty: Type,
    pub kind: ParamKind,
}

/// One declared access, resolved to its parameter.
pub struct Access {
    /// Index into `Task::params`.
    pub param: usize,
    /// A `Range<usize>`-valued expression, instead of `lo` and `hi`.
    pub range: Option<Expr>,
    pub lo: Option<Expr>,
    pub hi: Option<Expr>,
    pub inclusive: bool,
    pub write: bool,
}

pub struct Task {
    pub item: ItemFn,
    pub params: Vec<Param>,
    pub accesses: Vec<Access>,
    /// `blocks = K`: the blocks of a wide task's gang (`None`: one).
    pub blocks: Option<Expr>,
}

/// The widest gang a task may declare: `taskweave_device::gang::MAX_WIDTH`.
pub const MAX_BLOCKS: u64 = 1024;

/// Checks the spec's `blocks = K` entries: at most one, a literal `K` in `1..=MAX_BLOCKS`, and a
/// `&Block` parameter through which each block finds its rank.
fn check_blocks(blocks: &[Blocks], params: &[Param], errors: &mut Errors) -> Option<Expr> {
    for extra in blocks.iter().skip(1) {
        errors.push(extra.span, "`blocks` is given more than once");
    }
    let first = blocks.first()?;
    if let Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Int(int),
        ..
    }) = &first.value
    {
        match int.base10_parse::<u64>() {
            Ok(0) => errors.push(
                int.span(),
                "`blocks = 0` asks for no block: a task runs on at least one",
            ),
            Ok(k) if k > MAX_BLOCKS => errors.push(
                int.span(),
                format!("`blocks = {k}`: a task runs on at most {MAX_BLOCKS} blocks"),
            ),
            Ok(_) => {}
            Err(e) => errors.push(int.span(), e),
        }
    }
    if !params.iter().any(|p| matches!(p.kind, ParamKind::Block)) {
        errors.push(
            first.span,
            "a task with `blocks` takes a `&Block` parameter: each block of its gang finds its share through `block.gang().rank()`",
        );
    }
    Some(first.value.clone())
}

/// Collects every error, so one macro call reports them all at once.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        let error = syn::Error::new(span, message);
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub fn finish(self) -> Result<(), syn::Error> {
        self.0.map_or(Ok(()), Err)
    }
}

fn is_block(ty: &Type) -> bool {
    let Type::Reference(r) = ty else { return false };
    let Type::Path(p) = &*r.elem else {
        return false;
    };
    r.mutability.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Block")
}

/// `&[T]` or `&mut [T]` → `(T, writable)`.
pub fn slice_elem(ty: &Type) -> Option<(Type, bool)> {
    let Type::Reference(r) = ty else { return None };
    let Type::Slice(s) = &*r.elem else {
        return None;
    };
    Some(((*s.elem).clone(), r.mutability.is_some()))
}

fn classify(ty: &Type, errors: &mut Errors) -> ParamKind {
    if is_block(ty) {
        return ParamKind::Block;
    }
    if let Some((elem, writable)) = slice_elem(ty) {
        return ParamKind::Array {
            elem: Box::new(elem),
            writable,
        };
    }
    match ty {
        Type::Reference(_) => errors.push(
            ty.span(),
            "task scalars are captured by value: references cannot be task parameters; pass arrays as `&[T]` or `&mut [T]`",
        ),
        Type::Ptr(_) => errors.push(
            ty.span(),
            "raw pointers cannot be task parameters: host addresses mean nothing on the GPU; pass arrays as `&[T]` or `&mut [T]`",
        ),
        Type::ImplTrait(_) => errors.push(ty.span(), "`impl Trait` cannot be a task parameter type"),
        _ => {}
    }
    ParamKind::Scalar
}

/// The accesses of a task that declares no ranges, inferred from its parameter types over whole
/// arrays, as GrCUDA infers a kernel's dependences from its arguments: a `&[T]` parameter reads all
/// of its array, and a `&mut [T]` parameter reads and writes all of it (it may do either, and the
/// signature does not say which). Scalars and `&Block` have no access.
///
/// The accesses are the ones `a[..]` would declare, so inspection, the views and checked mode treat
/// them exactly as written ranges: two tasks that only read an array run concurrently, and any
/// task that may write it is ordered after every earlier task that touches it.
fn inferred(params: &[Param]) -> Vec<Access> {
    let whole = |param, write| Access {
        param,
        range: None,
        lo: None,
        hi: None,
        inclusive: false,
        write,
    };
    let mut accesses = Vec::new();
    for (index, param) in params.iter().enumerate() {
        if let ParamKind::Array { writable, .. } = param.kind {
            accesses.push(whole(index, false));
            if writable {
                accesses.push(whole(index, true));
            }
        }
    }
    accesses
}

fn check_shape(item: &ItemFn, errors: &mut Errors) {
    let sig = &item.sig;
    if let Some(token) = &sig.asyncness {
        errors.push(
            token.span,
            "tasks cannot be `async`: a task runs to completion on one block",
        );
    }
    if let Some(token) = &sig.constness {
        errors.push(token.span, "tasks cannot be `const fn`");
    }
    if !sig.generics.params.is_empty() {
        errors.push(
            sig.generics.span(),
            "tasks cannot be generic: every task is compiled once per kind for the GPU",
        );
    }
    if let Some(clause) = &sig.generics.where_clause {
        errors.push(clause.span(), "tasks cannot have a `where` clause");
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(variadic.span(), "tasks cannot be variadic");
    }
    if let Some(abi) = &sig.abi {
        errors.push(abi.span(), "tasks cannot declare an ABI");
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        errors.push(
            ty.span(),
            "tasks return nothing: write results into a `&mut [T]` array",
        );
    }
}

/// An error for each write the body makes to a `&[T]` parameter (see [`crate::writes`]).
fn check_read_only_writes(item: &ItemFn, params: &[Param], has_spec: bool, errors: &mut Errors) {
    let read_only: Vec<&Param> = params
        .iter()
        .filter(|p| {
            matches!(
                p.kind,
                ParamKind::Array {
                    writable: false,
                    ..
                }
            )
        })
        .collect();
    let names: Vec<&Ident> = read_only.iter().map(|p| &p.ident).collect();
    for (name, span) in crate::writes::written(&item.block, &names) {
        let Some(ParamKind::Array { elem, .. }) =
            read_only.iter().find(|p| p.ident == name).map(|p| &p.kind)
        else {
            continue;
        };
        let elem = elem.to_token_stream();
        let writes = if has_spec {
            " and add it to `writes`"
        } else {
            ""
        };
        errors.push(
            span,
            format!("`{name}` is read-only in this task (`&[{elem}]`): to write it, declare it `&mut [{elem}]`{writes}"),
        );
    }
}

impl Task {
    /// Checks `spec` against `item` and builds the model. All errors are reported together.
    ///
    /// An empty `spec` declares no ranges: every array's access is then inferred from its type
    /// (see [`inferred`]).
    pub fn new(spec: Spec, item: ItemFn) -> Result<Self, syn::Error> {
        let mut errors = Errors::default();
        check_shape(&item, &mut errors);

        let mut params = Vec::new();
        for arg in &item.sig.inputs {
            match arg {
                FnArg::Receiver(r) => errors.push(r.span(), "tasks cannot take `self`"),
                FnArg::Typed(pt) => {
                    let Pat::Ident(pat) = &*pt.pat else {
                        errors.push(pt.pat.span(), "task parameters must be plain identifiers");
                        continue;
                    };
                    if let Some(by_ref) = &pat.by_ref {
                        errors.push(
                            by_ref.span,
                            "task parameters are bound by value: remove `ref`",
                        );
                    }
                    let kind = classify(&pt.ty, &mut errors);
                    params.push(Param {
                        ident: pat.ident.clone(),
                        ty: (*pt.ty).clone(),
                        kind,
                    });
                }
            }
        }
        for extra in params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Block))
            .skip(1)
        {
            errors.push(
                extra.ty.span(),
                "a task takes at most one `&Block` parameter",
            );
        }

        check_read_only_writes(&item, &params, !spec.entries.is_empty(), &mut errors);
        let blocks = check_blocks(&spec.blocks, &params, &mut errors);

        if spec.entries.is_empty() {
            errors.finish()?;
            let accesses = inferred(&params);
            return Ok(Self {
                item,
                params,
                accesses,
                blocks,
            });
        }
        let mut accesses: Vec<Access> = Vec::new();
        let mut seen: Vec<(Key, String)> = Vec::new();
        // Parameters named in the spec, even by a rejected access: those already have an error.
        let mut named = vec![false; params.len()];
        for entry in spec.entries {
            if entry.accesses.is_empty() {
                errors.push(
                    entry.span,
                    "empty access list: name at least one range, as in `[a[lo..hi]]`",
                );
            }
            for access in entry.accesses {
                let name = &access.array;
                let Some(index) = params.iter().position(|p| p.ident == *name) else {
                    errors.push(
                        name.span(),
                        format!("unknown array `{name}`: it is not a parameter of this task"),
                    );
                    continue;
                };
                named[index] = true;
                let write = entry.key == Key::Writes;
                match &params[index].kind {
                    ParamKind::Scalar => {
                        errors.push(
                            name.span(),
                            format!("`{name}` is a scalar; only `&[T]` and `&mut [T]` parameters have ranges"),
                        );
                        continue;
                    }
                    ParamKind::Block => {
                        errors.push(
                            name.span(),
                            format!("`{name}` is the block context, not an array"),
                        );
                        continue;
                    }
                    ParamKind::Array {
                        elem,
                        writable: false,
                    } if write => {
                        let elem = elem.to_token_stream();
                        errors.push(
                            name.span(),
                            format!("`{name}` is under `writes`, but its parameter is `&[{elem}]`: declare it `&mut [{elem}]`, or move it to `reads`"),
                        );
                        continue;
                    }
                    ParamKind::Array { .. } => {}
                }
                let text = match &access.range {
                    Some(range) => format!("{}[{}]", name, range.to_token_stream()),
                    None => format!(
                        "{}[{}{}{}]",
                        name,
                        access.lo.to_token_stream(),
                        if access.inclusive { "..=" } else { ".." },
                        access.hi.to_token_stream()
                    ),
                };
                if seen.contains(&(entry.key, text.clone())) {
                    errors.push(access.span, format!("duplicate access `{text}`"));
                    continue;
                }
                seen.push((entry.key, text));
                accesses.push(Access {
                    param: index,
                    range: access.range,
                    lo: access.lo,
                    hi: access.hi,
                    inclusive: access.inclusive,
                    write,
                });
            }
        }

        for (index, param) in params.iter().enumerate() {
            let ParamKind::Array { elem, writable } = &param.kind else {
                continue;
            };
            let declared = accesses.iter().filter(|a| a.param == index);
            let name = &param.ident;
            if declared.clone().next().is_none() {
                // Reported above already: a rejected access of this array.
                if named[index] {
                    continue;
                }
                errors.push(
                    name.span(),
                    format!("array `{name}` has no declared access: add it to `reads` or `writes`, or remove it; only a task that declares no ranges at all has them inferred from its parameter types"),
                );
            } else if *writable && !declared.clone().any(|a| a.write) {
                let elem = elem.to_token_stream();
                errors.push(
                    param.ty.span(),
                    format!("`{name}` is `&mut [{elem}]` but never written: declare it `&[{elem}]`, or add it to `writes`"),
                );
            }
        }

        errors.finish()?;
        Ok(Self {
            item,
            params,
            accesses,
            blocks,
        })
    }

    /// The parameters that travel as argument words: all but `&Block`, in order.
    pub fn words(&self) -> impl Iterator<Item = (usize, &Param)> {
        self.params
            .iter()
            .filter(|p| !matches!(p.kind, ParamKind::Block))
            .enumerate()
    }
}
