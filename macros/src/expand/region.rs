//! `task_region!`: the host function that inspects and runs the region, the dispatch table from
//! task kind to body, and the region's kernel entry for the GPU.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, ExprCall, FnArg, ItemFn, Pat, ReturnType, Stmt, Type};

use crate::model::{Errors, slice_elem};

pub fn expand(input: TokenStream) -> TokenStream {
    let item: ItemFn = match syn::parse2(input) {
        Ok(item) => item,
        Err(e) => {
            return syn::Error::new(e.span(), format!("{e}; `task_region!` holds one function: `task_region! {{ pub fn name(a: &mut [f32], n: usize) {{ … }} }}`"))
                .to_compile_error();
        }
    };
    match generate(item.clone()) {
        Ok(tokens) => tokens,
        Err(e) => e.to_compile_error(),
    }
}

enum RegionParam {
    Array {
        ident: syn::Ident,
        elem: Type,
        writable: bool,
        /// A `DeviceArray<T>` that lives on the device across regions, rather than a host slice.
        resident: bool,
    },
    Scalar {
        ident: syn::Ident,
        ty: Type,
    },
}

/// `&DeviceArray<T>` or `&mut DeviceArray<T>` (by the last path segment) → `(T, writable)`.
fn device_array_elem(ty: &Type) -> Option<(Type, bool)> {
    let Type::Reference(r) = ty else { return None };
    let Type::Path(p) = &*r.elem else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "DeviceArray" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(elem) if args.args.len() == 1 => {
            Some((elem.clone(), r.mutability.is_some()))
        }
        _ => None,
    }
}

fn params(item: &ItemFn, errors: &mut Errors) -> Vec<RegionParam> {
    let sig = &item.sig;
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(sig.generics.span(), "regions cannot be generic");
    }
    if let Some(token) = &sig.asyncness {
        errors.push(token.span, "regions cannot be `async`; submit them without waiting through the returned region instead");
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        errors.push(
            ty.span(),
            "regions return nothing: calling one returns a `taskweave::Region` to run",
        );
    }
    let mut out = Vec::new();
    for arg in &sig.inputs {
        let FnArg::Typed(pt) = arg else {
            errors.push(arg.span(), "regions cannot take `self`");
            continue;
        };
        let Pat::Ident(pat) = &*pt.pat else {
            errors.push(pt.pat.span(), "region parameters must be plain identifiers");
            continue;
        };
        let ident = pat.ident.clone();
        let ty = &*pt.ty;
        if let Some((elem, writable)) = slice_elem(ty) {
            out.push(RegionParam::Array {
                ident,
                elem,
                writable,
                resident: false,
            });
            continue;
        }
        if let Some((elem, writable)) = device_array_elem(ty) {
            out.push(RegionParam::Array {
                ident,
                elem,
                writable,
                resident: true,
            });
            continue;
        }
        match ty {
            Type::Reference(r) => errors.push(
                r.span(),
                "unsupported region parameter: regions take arrays as `&[T]` (copied to the device), `&mut [T]` (copied there and back) or `&DeviceArray<T>` / `&mut DeviceArray<T>` (resident on the device), and scalars by value",
            ),
            Type::Ptr(_) => errors.push(ty.span(), "raw pointers cannot be region parameters; pass arrays as `&[T]` or `&mut [T]`"),
            Type::ImplTrait(_) => errors.push(ty.span(), "`impl Trait` cannot be a region parameter type"),
            _ => out.push(RegionParam::Scalar { ident, ty: ty.clone() }),
        }
    }
    out
}

/// Rewrites every `spawn!(task(args…))` into a call of the task's spawn function, numbering the
/// task kinds in order of first appearance.
struct Spawns {
    kinds: Vec<syn::Path>,
    errors: Errors,
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

fn generate(item: ItemFn) -> syn::Result<TokenStream> {
    let p = quote!(::taskweave::__private);
    let mut errors = Errors::default();
    let params = params(&item, &mut errors);
    let mut body = item.block.clone();
    let mut spawns = Spawns {
        kinds: Vec::new(),
        errors,
    };
    spawns.visit_block_mut(&mut body);
    spawns.errors.finish()?;
    let kinds = spawns.kinds;

    let name = &item.sig.ident;
    let name_str = name.to_string();
    let vis = &item.vis;
    let attrs = &item.attrs;
    let dispatch = format_ident!("__taskweave_dispatch_{}", name);
    let kernel = format_ident!("taskweave_region_{}", name);
    let kernel_str = kernel.to_string();
    let listed = format_ident!("taskweave_listed_{}", name);
    let levels = format_ident!("taskweave_levels_{}", name);
    let kind_names = kinds
        .iter()
        .map(|k| quote!(#k).to_string().replace(' ', ""));

    let arms = kinds.iter().enumerate().map(|(kind, path)| {
        let kind = kind as u32;
        quote! {
            (#kind, true) => #path::__tw_run::<true>(block, args, arrays),
            (#kind, false) => #path::__tw_run::<false>(block, args, arrays),
        }
    });
    let unchecked_arms = kinds.iter().enumerate().map(|(kind, path)| {
        let kind = kind as u32;
        quote!(#kind => #path::__tw_run::<false>(block, args, arrays),)
    });
    let dispatch_unchecked = format_ident!("__taskweave_dispatch_unchecked_{}", name);
    let checked_kernels = kernels(&kernel, &listed, &levels, &dispatch, "");
    let unchecked_kernels = kernels(
        &format_ident!("{}__unchecked", kernel),
        &format_ident!("{}__unchecked", listed),
        &format_ident!("{}__unchecked", levels),
        &dispatch_unchecked,
        "\n\nFor runs with index checks off: the checked task bodies are not compiled in, so \
         their registers do not count (a kernel's register count, which bounds the blocks an SM \
         holds, is that of its heaviest path).",
    );

    let mut fn_params = Vec::new();
    let mut binds = quote!();
    let mut checks = quote!();
    for param in &params {
        match param {
            RegionParam::Array {
                ident,
                elem,
                writable,
                resident: true,
            } => {
                let ident_str = ident.to_string();
                if *writable {
                    // A resident array is borrowed only while the region is built: the region keeps the
                    // memory alive itself, so regions in flight can share it.
                    fn_params.push(quote!(#ident: &mut #p::host::DeviceArray<#elem>));
                    binds.extend(
                        quote!(let #ident = __tw_region.bind_resident_mut(#ident, #ident_str);),
                    );
                } else {
                    fn_params.push(quote!(#ident: &#p::host::DeviceArray<#elem>));
                    binds.extend(
                        quote!(let #ident = __tw_region.bind_resident(#ident, #ident_str);),
                    );
                }
            }
            RegionParam::Array {
                ident,
                elem,
                writable,
                resident: false,
            } => {
                let ident_str = ident.to_string();
                if *writable {
                    fn_params.push(quote!(#ident: &'__tw mut [#elem]));
                    binds.extend(quote!(let #ident = __tw_region.bind_mut(#ident, #ident_str);));
                } else {
                    fn_params.push(quote!(#ident: &'__tw [#elem]));
                    binds.extend(quote!(let #ident = __tw_region.bind(#ident, #ident_str);));
                }
            }
            RegionParam::Scalar { ident, ty } => {
                fn_params.push(quote!(#ident: #ty));
                checks.extend(quote_spanned!(ty.span()=> #p::host::inspect::assert_copy::<#ty>();));
            }
        }
    }

    Ok(quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis struct #dispatch;

        impl #p::device::sched::Dispatch for #dispatch {
            #[inline(always)]
            fn run(
                &self,
                block: &#p::device::Block,
                kind: u32,
                args: &[u64],
                arrays: &[#p::device::abi::ArrayDesc],
                checked: bool,
            ) {
                match (kind, checked) {
                    #(#arms)*
                    _ => {}
                }
            }
        }

        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis struct #dispatch_unchecked;

        impl #p::device::sched::Dispatch for #dispatch_unchecked {
            #[inline(always)]
            fn run(
                &self,
                block: &#p::device::Block,
                kind: u32,
                args: &[u64],
                arrays: &[#p::device::abi::ArrayDesc],
                _checked: bool,
            ) {
                match kind {
                    #(#unchecked_arms)*
                    _ => {}
                }
            }
        }

        #checked_kernels
        #unchecked_kernels

        #(#attrs)*
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(unexpected_cfgs, clippy::too_many_arguments)]
        #[track_caller]
        #vis fn #name<'__tw>(#(#fn_params),*) -> #p::host::Region<'__tw> {
            #checks
            #[cfg(taskweave_ptx)]
            let (__tw_ptx, __tw_cubin): (::core::option::Option<&'static str>, &'static [u8]) = (
                ::core::option::Option::Some(::taskweave::include_ptx!()),
                ::taskweave::include_cubin!(),
            );
            #[cfg(not(taskweave_ptx))]
            let (__tw_ptx, __tw_cubin): (::core::option::Option<&'static str>, &'static [u8]) =
                (::core::option::Option::None, &[]);
            let mut __tw_region = #p::host::Region::new(#p::host::RegionMeta {
                name: #name_str,
                kernel: #kernel_str,
                ptx: __tw_ptx,
                cubin: __tw_cubin,
                kinds: &[#(#kind_names),*],
                dispatch: &#dispatch,
                location: ::core::panic::Location::caller(),
            });
            #binds
            __tw_region.body(move |__tw_rec: &mut #p::host::inspect::Recorder| {
                #[allow(unused_braces)]
                #body
                ::core::result::Result::Ok(())
            })
        }
    })
}

/// The region's three kernel entries, named `kernel`, `listed` and `levels`, over `dispatch`;
/// `note` ends their docs.
fn kernels(
    kernel: &syn::Ident,
    listed: &syn::Ident,
    levels: &syn::Ident,
    dispatch: &syn::Ident,
    note: &str,
) -> TokenStream {
    let p = quote!(::taskweave::__private);
    let doc = |text: &str| format!("{text}{note}");
    let (kernel_doc, listed_doc, levels_doc) = (
        doc("The region's kernel: persistent workers running its DAG."),
        doc("The region's one-launch-per-level kernel: block `b` runs task `list[b]`."),
        doc("The region's one-launch kernel with a grid barrier between levels."),
    );
    quote! {
        #[doc = #kernel_doc]
        ///
        /// # Safety
        /// `desc` must describe this region's DAG and arrays; the host runtime guarantees it.
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn #kernel(desc: *const #p::device::abi::RegionDesc) {
            // SAFETY: forwarded from this kernel's contract.
            unsafe { #p::device::sched::gpu_entry(desc, &#dispatch) }
        }

        #[doc = #listed_doc]
        ///
        /// # Safety
        /// `desc` must describe this region; `list` holds one task index per block.
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn #listed(desc: *const #p::device::abi::RegionDesc, list: *const u32) {
            // SAFETY: forwarded from this kernel's contract.
            unsafe { #p::device::sched::gpu_listed(desc, list, &#dispatch) }
        }

        #[doc = #levels_doc]
        ///
        /// # Safety
        /// `desc` must describe this region; `offsets`/`tasks` list its levels; `barrier` is two
        /// zeroed words; every block must be resident.
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn #levels(
            desc: *const #p::device::abi::RegionDesc,
            offsets: *const u32,
            tasks: *const u32,
            levels: u32,
            barrier: *mut u32,
        ) {
            // SAFETY: forwarded from this kernel's contract.
            unsafe { #p::device::sched::gpu_levels(desc, offsets, tasks, levels, barrier, &#dispatch) }
        }
    }
}
