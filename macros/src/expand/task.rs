//! `#[task]`: the body compiled for both targets, its argument unpacking and range evaluation on the
//! device, and its spawn function for inspection on the host.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ItemFn;
use syn::spanned::Spanned;

use crate::model::{Access, ParamKind, Task};
use crate::parse::Spec;

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item: ItemFn = match syn::parse2(item.clone()) {
        Ok(item) => item,
        Err(e) => {
            let error =
                syn::Error::new(e.span(), "`#[task]` goes on a function").to_compile_error();
            return quote!(#item #error);
        }
    };
    let task = syn::parse2::<Spec>(attr).and_then(|spec| Task::new(spec, item.clone()));
    match task {
        Ok(task) => generate(&task),
        Err(e) => {
            let error = e.to_compile_error();
            quote!(#item #error)
        }
    }
}

/// `lo..hi` for one access, with `len` naming the array's length.
fn range(access: &Access, len: &syn::Ident) -> TokenStream {
    if let Some(range) = &access.range {
        let _ = len;
        return quote_spanned!(range.span()=> { let __tw_range: ::core::ops::Range<usize> = #range; __tw_range });
    }
    let lo = access
        .lo
        .as_ref()
        .map_or_else(|| quote!(0usize), |lo| quote_spanned!(lo.span()=> #lo));
    let hi = match &access.hi {
        Some(hi) if access.inclusive => quote_spanned!(hi.span()=> (#hi) + 1usize),
        Some(hi) => quote_spanned!(hi.span()=> #hi),
        None => quote!(#len),
    };
    let lo_span = access
        .lo
        .as_ref()
        .map_or_else(Span::call_site, |e| e.span());
    let hi_span = access
        .hi
        .as_ref()
        .map_or_else(Span::call_site, |e| e.span());
    let lo_bind = quote_spanned!(lo_span=> let __tw_lo: usize = #lo;);
    let hi_bind = quote_spanned!(hi_span=> let __tw_hi: usize = #hi;);
    quote!({ #lo_bind #hi_bind __tw_lo..__tw_hi })
}

fn generate(task: &Task) -> TokenStream {
    let p = quote!(::taskweave::__private);
    let max = crate::model::MAX_BLOCKS;
    let item = &task.item;
    let name = &item.sig.ident;
    let name_str = name.to_string();
    let vis = &item.vis;
    let attrs = &item.attrs;
    let block = &item.block;
    let unsafety = &item.sig.unsafety;

    // The body, with array parameters turned into views and generic over the checking mode.
    let inputs = task.params.iter().map(|param| {
        let ident = &param.ident;
        let ty = &param.ty;
        match &param.kind {
            ParamKind::Array { elem, writable: true } => {
                quote_spanned!(ty.span()=> #[allow(unused_mut)] mut #ident: #p::device::ViewMut<'_, #elem, __TW_CHECKED>)
            }
            ParamKind::Array { elem, writable: false } => {
                quote_spanned!(ty.span()=> #ident: #p::device::View<'_, #elem, __TW_CHECKED>)
            }
            _ => quote!(#ident: #ty),
        }
    });
    let mut user_attrs = quote!();
    for attr in attrs {
        user_attrs.extend(quote!(#attr));
    }
    let body_fn = quote! {
        #user_attrs
        #[allow(clippy::too_many_arguments)]
        #vis #unsafety fn #name<const __TW_CHECKED: bool>(#(#inputs),*) #block
    };

    // Device side: unpack the words, evaluate the ranges, build the views, call the body.
    let mut unpack = quote!();
    let mut views = quote!();
    for (word, param) in task.words() {
        let ident = &param.ident;
        let ty = &param.ty;
        match &param.kind {
            ParamKind::Scalar => unpack.extend(quote_spanned! {ty.span()=>
                // SAFETY: the spawn function wrote one word per parameter.
                let #ident: #ty = <#ty as #p::device::Scalar>::from_bits(unsafe { #p::device::view::word(__tw_args, #word) });
            }),
            ParamKind::Array { .. } => {
                let slot = format_ident!("__tw_slot_{}", ident);
                let len = format_ident!("__tw_len_{}", ident);
                unpack.extend(quote! {
                    // SAFETY: the spawn function wrote one word per parameter, and array words are
                    // slots of the region's array table.
                    let (#slot, #len) = unsafe {
                        let slot = #p::device::view::word(__tw_args, #word) as usize;
                        (slot, #p::device::view::array(__tw_arrays, slot).len as usize)
                    };
                });
            }
            ParamKind::Block => {}
        }
    }
    let param_index = |ident: &syn::Ident| task.params.iter().position(|p| p.ident == *ident);
    for param in &task.params {
        let ParamKind::Array { elem, writable } = &param.kind else {
            continue;
        };
        let ident = &param.ident;
        let index = param_index(ident);
        let slot = format_ident!("__tw_slot_{}", ident);
        let len = format_ident!("__tw_len_{}", ident);
        let mine: Vec<&Access> = task
            .accesses
            .iter()
            .filter(|a| Some(a.param) == index)
            .collect();
        let all = mine.iter().map(|a| range(a, &len));
        let writes = mine.iter().filter(|a| a.write).map(|a| range(a, &len));
        let ident_str = ident.to_string();
        let (view, ptr) = if *writable {
            (quote!(ViewMut), quote!(*mut #elem))
        } else {
            (quote!(View), quote!(*const #elem))
        };
        views.extend(quote! {
            let __tw_all = [#(#all),*];
            let __tw_writes: [::core::ops::Range<usize>; _] = [#(#writes),*];
            // SAFETY: the runtime hands each task the region's arrays, and inspection checked that
            // every declared range lies within its array.
            let #ident = unsafe {
                #p::device::#view::<#elem, __TW_CHECKED>::new(
                    #p::device::view::array(__tw_arrays, #slot).ptr as #ptr,
                    #len,
                    #p::device::view::Declared {
                        ranges: &__tw_all,
                        writes: &__tw_writes,
                        slot: #slot as u32,
                        name: #ident_str,
                        task: #name_str,
                        misses: &__tw_misses,
                    },
                )
            };
        });
    }
    // Views are built after all scalars are bound, since range bounds use the scalars. Each array's
    // `__tw_all` shadows the previous one, which stays alive for the view that borrows it.
    let call_args = task.params.iter().map(|param| match param.kind {
        ParamKind::Block => quote!(__tw_block),
        _ => {
            let ident = &param.ident;
            quote!(#ident)
        }
    });
    let call = if unsafety.is_some() {
        quote!(unsafe { #name::<__TW_CHECKED>(#(#call_args),*) })
    } else {
        quote!(#name::<__TW_CHECKED>(#(#call_args),*))
    };

    // Host side: the spawn function the region calls during inspection.
    let mut spawn_params = Vec::new();
    let mut spawn_generics = Vec::new();
    let mut words = Vec::new();
    let mut lens = quote!();
    // The array parameters, with whether each is `&mut [T]`.
    let mut arrays: Vec<(&syn::Ident, bool)> = Vec::new();
    for (word, param) in task.words() {
        let ident = &param.ident;
        let ty = &param.ty;
        match &param.kind {
            ParamKind::Scalar => {
                spawn_params.push(quote!(#ident: #ty));
                words
                    // Through a function pointer, so that a type that is not a `Scalar` gets the
                    // same error here as in the unpacking above, which rustc then reports once.
                    .push(quote_spanned!(ty.span()=> {
                        let __tw_to_bits: fn(#ty) -> u64 = <#ty as #p::device::Scalar>::to_bits;
                        __tw_to_bits(#ident)
                    }));
            }
            ParamKind::Array { elem, writable } => {
                let mode = if *writable {
                    quote!(#p::host::inspect::ReadWrite)
                } else {
                    let generic = format_ident!("__TwMode{}", word);
                    spawn_generics.push(quote!(#generic: #p::host::inspect::Mode));
                    quote!(#generic)
                };
                spawn_params.push(
                    quote_spanned!(ty.span()=> #ident: #p::host::inspect::ArrayArg<#elem, #mode>),
                );
                words.push(quote!(#ident.slot() as u64));
                arrays.push((ident, *writable));
                let len = format_ident!("__tw_len_{}", ident);
                lens.extend(quote!(let #len = #ident.len();));
            }
            ParamKind::Block => {}
        }
    }
    let accesses = task.accesses.iter().map(|access| {
        let param = &task.params[access.param].ident;
        let len = format_ident!("__tw_len_{}", param);
        let range = range(access, &len);
        let write = access.write;
        let param_str = param.to_string();
        quote! {
            #p::host::inspect::Access { slot: #param.slot(), range: #range, write: #write, param: #param_str }
        }
    });
    let arg_formats = task.words().map(|(_, param)| match &param.kind {
        ParamKind::Array { .. } => quote!(#p::host::inspect::Arg::Array),
        _ => {
            let ty = &param.ty;
            quote_spanned!(ty.span()=> #p::host::inspect::Arg::Value(<#ty as #p::device::Scalar>::fmt_bits))
        }
    });
    let word_count = words.len();
    // A literal `blocks` was checked by the macro; a constant expression is checked here, at
    // compile time, where the item is defined.
    let (blocks, blocks_check) = match &task.blocks {
        Some(value) => (
            quote_spanned!(value.span()=> #value),
            quote_spanned! {value.span()=>
                const _: () = ::core::assert!(
                    #name::BLOCKS >= 1 && #name::BLOCKS as u64 <= #max,
                    "`blocks` must be at least 1 and at most 1024"
                );
            },
        ),
        None => (quote!(1u32), quote!()),
    };

    // One array reaching the task through a `&mut [T]` parameter and another parameter would give
    // the body two views of it: borrowck stops a write through a view while a reference from that
    // view is alive, but not a write through the other one. Only the task knows which parameters
    // are `&mut`, so the check is here, one compare per pair that could alias.
    let mut alias_checks = quote!();
    for (i, &(first, first_writable)) in arrays.iter().enumerate() {
        for &(second, second_writable) in &arrays[i + 1..] {
            if !first_writable && !second_writable {
                continue;
            }
            let (first_str, second_str) = (first.to_string(), second.to_string());
            alias_checks.extend(quote! {
                if #first.slot() == #second.slot() {
                    return ::core::result::Result::Err(__tw_rec.aliased(
                        __tw_kind,
                        __tw_location,
                        &__tw_words,
                        #first.slot(),
                        [#first_str, #second_str],
                        [#first_writable, #second_writable],
                    ));
                }
            });
        }
    }

    quote! {
        #body_fn

        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name {}

        const _: () = {
            impl #name {
                /// The task's name, for reports.
                pub const NAME: &'static str = #name_str;
                /// The blocks each of its tasks runs on (`blocks = K`; 1 unless it is wide).
                pub const BLOCKS: u32 = #blocks;
                /// How its argument words print in errors, in order.
                #[cfg(not(target_arch = "nvptx64"))]
                pub const ARGS: &'static [#p::host::inspect::Arg] = &[#(#arg_formats),*];

                #[doc(hidden)]
                #[inline(always)]
                #[allow(unused_variables, clippy::too_many_lines)]
                pub fn __tw_run<const __TW_CHECKED: bool>(
                    __tw_block: &#p::device::Block,
                    __tw_args: &[u64],
                    __tw_arrays: &[#p::device::abi::ArrayDesc],
                ) {
                    #unpack
                    let __tw_misses = #p::device::view::Misses::new();
                    #views
                    #call;
                    // A checked access outside the declared ranges is reported here, once the
                    // body has returned (see `Misses`).
                    if __TW_CHECKED {
                        __tw_misses.report();
                    }
                }

                /// `spawn!(task(args…))` calls `task::__tw_spawner(rec, kind).__tw_spawn(args…)`,
                /// so that the task's own arguments alone make up a call that rustc checks.
                #[doc(hidden)]
                #[cfg(not(target_arch = "nvptx64"))]
                pub fn __tw_spawner(
                    __tw_rec: &mut #p::host::inspect::Recorder,
                    __tw_kind: u32,
                ) -> __TwSpawner<'_> {
                    __TwSpawner { __tw_rec, __tw_kind }
                }
            }

            #blocks_check

            #[doc(hidden)]
            #[cfg(not(target_arch = "nvptx64"))]
            pub struct __TwSpawner<'__tw_r> {
                __tw_rec: &'__tw_r mut #p::host::inspect::Recorder,
                __tw_kind: u32,
            }

            #[cfg(not(target_arch = "nvptx64"))]
            impl __TwSpawner<'_> {
                #[doc(hidden)]
                #[track_caller]
                #[allow(clippy::too_many_arguments, unused_variables)]
                pub fn __tw_spawn<#(#spawn_generics),*>(
                    self,
                    #(#spawn_params),*
                ) -> ::core::result::Result<(), #p::host::Error> {
                    let Self { __tw_rec, __tw_kind } = self;
                    let __tw_location = ::core::panic::Location::caller();
                    let __tw_words: [u64; #word_count] = [#(#words),*];
                    #alias_checks
                    #lens
                    __tw_rec.spawn(__tw_kind, __tw_location, &__tw_words, &[#(#accesses),*])
                }
            }
        };
    }
}
