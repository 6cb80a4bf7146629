//! `task_region!`: the host function that inspects and runs the region, the dispatch table from
//! task kind to body, and the region's kernel entry for the GPU.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{FnArg, ItemFn, Pat, ReturnType, Type};
use taskweave_names::{Entry, Kernel};

use super::kernels;
use super::spawns::Spawns;
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
        /// Marked `#[output]`: a host array passed for it is not copied to the device.
        output: bool,
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
        let mut output = None;
        for attr in &pt.attrs {
            if attr.path().is_ident("output") && matches!(attr.meta, syn::Meta::Path(_)) {
                output = Some(attr.span());
            } else {
                errors.push(
                    attr.span(),
                    "region parameters take one attribute, `#[output]`: on a `&mut [T]` the region writes before it reads, so that it is not copied to the GPU",
                );
            }
        }
        if let Some((elem, writable)) = slice_elem(ty) {
            if let (Some(span), false) = (output, writable) {
                errors.push(
                    span,
                    "`#[output]` is for a `&mut [T]` the region writes: this array is read only",
                );
            }
            out.push(RegionParam::Array {
                ident,
                elem,
                writable,
                output: output.is_some() && writable,
            });
            continue;
        }
        if let Some((elem, writable)) = device_array_elem(ty) {
            if let Some(span) = output {
                errors.push(
                    span,
                    "`#[output]` is for host slices (`&mut [T]`): a `DeviceArray` is never copied",
                );
            }
            out.push(RegionParam::Array {
                ident,
                elem,
                writable,
                output: false,
            });
            continue;
        }
        if let Some(span) = output {
            errors.push(span, "`#[output]` is for arrays passed as `&mut [T]`");
        }
        match ty {
            Type::Reference(r) => errors.push(
                r.span(),
                "unsupported region parameter: declare arrays as `&[T]` (read) or `&mut [T]` (written), to which a call may pass any host array (a slice, a `Vec`, an array: copied) or a `DeviceArray<T>` (resident on the device), and scalars by value",
            ),
            Type::Ptr(_) => errors.push(ty.span(), "raw pointers cannot be region parameters; pass arrays as `&[T]` or `&mut [T]`"),
            Type::ImplTrait(_) => errors.push(ty.span(), "`impl Trait` cannot be a region parameter type"),
            _ => out.push(RegionParam::Scalar { ident, ty: ty.clone() }),
        }
    }
    out
}

fn generate(item: ItemFn) -> syn::Result<TokenStream> {
    let p = quote!(::taskweave::__private);
    let mut errors = Errors::default();
    let params = params(&item, &mut errors);
    let mut body = item.block.clone();
    let mut spawns = Spawns {
        errors,
        ..Spawns::default()
    };
    spawns.visit_block_mut(&mut body);
    spawns.errors.finish()?;
    let kinds = spawns.kinds;

    let name = &item.sig.ident;
    let name_str = name.to_string();
    let vis = &item.vis;
    let attrs = &item.attrs;
    let stem = kernels::stem(name, name.span());
    let kernel_str = Kernel::new(Entry::Persistent, &stem).to_string();
    let dispatch_name = format_ident!("__taskweave_dispatch_{}", name);
    let dispatch = kernels::dispatch(&dispatch_name, vis, &kinds);
    let kernels = kernels::kernels(&stem, &dispatch_name);
    let code = kernels::code(&stem);
    let bin = std::env::var("CARGO_BIN_NAME").ok();
    let not_in_a_binary = kernels::not_in_a_binary(name, bin.as_deref());
    let kind_names = kinds
        .iter()
        .map(|k| quote!(#k).to_string().replace(' ', ""));

    let mut fn_params = Vec::new();
    let mut binds = quote!();
    let mut checks = quote!();
    // The scalar arguments' words, for the runtime's plan cache: a `Scalar`'s bits, or `None`.
    let mut key_words = Vec::new();
    for param in &params {
        match param {
            // Every array parameter takes a host array or a `DeviceArray` of its element type:
            // the call decides whether it is copied (`taskweave::ArrayRef`, `ArrayMut`). A device
            // array is borrowed only while the region is built: the region keeps the memory
            // alive itself, so regions in flight can share it.
            RegionParam::Array {
                ident,
                elem,
                writable,
                output,
            } => {
                let ident_str = ident.to_string();
                if *writable {
                    fn_params.push(quote!(#ident: impl #p::host::ArrayMut<'__tw, #elem>));
                    let bind = if *output {
                        quote!(bind_output_to)
                    } else {
                        quote!(bind_to)
                    };
                    binds.extend(quote!(
                        let #ident = #p::host::ArrayMut::#bind(#ident, &mut __tw_region, #ident_str);
                    ));
                } else {
                    fn_params.push(quote!(#ident: impl #p::host::ArrayRef<'__tw, #elem>));
                    binds.extend(quote!(
                        let #ident = #p::host::ArrayRef::bind_to(#ident, &mut __tw_region, #ident_str);
                    ));
                }
            }
            RegionParam::Scalar { ident, ty } => {
                fn_params.push(quote!(#ident: #ty));
                checks.extend(quote_spanned!(ty.span()=> #p::host::inspect::assert_copy::<#ty>();));
                key_words.push(quote!((&#p::host::inspect::KeyOf(&#ident)).key_word()));
            }
        }
    }

    Ok(quote! {
        #not_in_a_binary
        #dispatch
        #kernels

        #(#attrs)*
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(unexpected_cfgs, clippy::too_many_arguments)]
        #[track_caller]
        #vis fn #name<'__tw>(#(#fn_params),*) -> #p::host::Region<'__tw> {
            #checks
            let __tw_code = #code;
            let mut __tw_region = #p::host::Region::new(#p::host::RegionMeta {
                name: #name_str,
                kernel: #kernel_str,
                code: __tw_code,
                kinds: &[#(#kind_names),*],
                args: &[#(#kinds::ARGS),*],
                dispatch: &#dispatch_name::<true>,
                location: ::core::panic::Location::caller(),
            });
            #binds
            {
                use #p::host::inspect::{OpaqueKey as _, ScalarKey as _};
                __tw_region.key_words(&[#(#key_words),*]);
            }
            __tw_region.body(move |__tw_rec: &mut #p::host::inspect::Recorder| {
                #[allow(unused_braces)]
                #body
                ::core::result::Result::Ok(())
            })
        }
    })
}
