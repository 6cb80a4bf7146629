//! What a region compiles to besides its host function: the dispatch from task kind to body, the
//! kernel entries of the device build, and the embedded device code of the host build.
//!
//! Every symbol is named through `taskweave_names`, from the region's stem: its name and a hash
//! of where it is written, which the device build and the host build of a crate agree on.

use std::path::{Path, PathBuf};

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use taskweave_names::{Entry, Kernel, cfg, code_symbol, env, region_stem};

/// The stem of the symbols of the region `name`, written at `span`.
pub fn stem(name: &syn::Ident, span: Span) -> String {
    region_stem(&name.to_string(), &site(span))
}

/// Where `span` is: its file relative to the crate's manifest directory, line and column. Both
/// builds of a crate compile the same files from the same directory, but cargo may pass a file's
/// path relative to the workspace in one and absolute in the other, hence the relative path.
fn site(span: Span) -> String {
    if !proc_macro::is_available() {
        return String::new();
    }
    let span = span.unwrap();
    let file = span
        .local_file()
        .and_then(|file| relative_to_crate(&file))
        .unwrap_or_else(|| span.file());
    format!("{file}:{}:{}", span.line(), span.column())
}

fn relative_to_crate(file: &Path) -> Option<String> {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    let absolute = std::env::current_dir().ok()?.join(file);
    let absolute = absolute.canonicalize().unwrap_or(absolute);
    let manifest = manifest.canonicalize().unwrap_or(manifest);
    let relative = absolute.strip_prefix(manifest).ok()?;
    let parts: Vec<_> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect();
    Some(parts.join("/"))
}

/// The region's dispatch from task kind to body: one type, `dispatch<CHECKED>`. Its `true`
/// instance runs a task's checked body when the run asks for checks; its `false` instance never
/// does, so the kernels over it hold no checked body (a kernel's register count, which bounds the
/// blocks an SM holds, is that of its heaviest path).
pub fn dispatch(dispatch: &syn::Ident, vis: &syn::Visibility, kinds: &[syn::Path]) -> TokenStream {
    let p = quote!(::taskweave::__private);
    let arms = kinds.iter().enumerate().map(|(kind, path)| {
        let kind = kind as u32;
        quote! {
            #kind => if __TW_CHECKED && checked {
                #path::__tw_run::<true>(block, args, arrays)
            } else {
                #path::__tw_run::<false>(block, args, arrays)
            },
        }
    });
    let paths = kinds.iter();
    let widths = kinds.iter().enumerate().map(|(kind, path)| {
        let kind = kind as u32;
        quote!(#kind => #path::BLOCKS,)
    });
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis struct #dispatch<const __TW_CHECKED: bool>;

        impl<const __TW_CHECKED: bool> #p::device::sched::Dispatch for #dispatch<__TW_CHECKED> {
            #[inline(always)]
            fn may_check(&self) -> bool {
                __TW_CHECKED
            }

            #[inline(always)]
            fn gangs(&self) -> bool {
                false #(|| #paths::BLOCKS > 1)*
            }

            #[inline(always)]
            fn width(&self, kind: u32) -> u32 {
                match kind {
                    #(#widths)*
                    _ => 1,
                }
            }

            #[inline(always)]
            fn run(
                &self,
                block: &#p::device::Block,
                kind: u32,
                args: &[u64],
                arrays: &[#p::device::abi::ArrayDesc],
                checked: bool,
            ) {
                match kind {
                    #(#arms)*
                    _ => {}
                }
            }
        }
    }
}

/// The region's kernel entries, each checked and unchecked, over `dispatch`.
pub fn kernels(stem: &str, dispatch: &syn::Ident) -> TokenStream {
    let mut out = TokenStream::new();
    for checked in [true, false] {
        let kernel = |entry| {
            let kernel = Kernel::new(entry, stem);
            let kernel = if checked { kernel } else { kernel.unchecked() };
            format_ident!("{}", kernel.to_string())
        };
        let note = if checked {
            ""
        } else {
            "\n\nFor runs with index checks off: the checked task bodies are not compiled in, so \
             their registers do not count."
        };
        out.extend(entries(
            &kernel(Entry::Persistent),
            &kernel(Entry::Listed),
            &kernel(Entry::Levels),
            &quote!(#dispatch::<#checked>),
            note,
        ));
    }
    out
}

/// The three kernel entries, named `kernel`, `listed` and `levels`, over `dispatch`; `note` ends
/// their docs.
fn entries(
    kernel: &syn::Ident,
    listed: &syn::Ident,
    levels: &syn::Ident,
    dispatch: &TokenStream,
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
        /// `desc` must describe this region; `list` holds one entry per block, built from its
        /// task records.
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn #listed(
            desc: *const #p::device::abi::RegionDesc,
            list: *const #p::device::abi::ListedTask,
        ) {
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

/// An expression of type `Option<Code>`: the crate's kernel bundle when the crate has a device
/// build, else `None`.
///
/// The bundle is embedded once per crate, not once per region: the builder names one region in
/// `cfg(taskweave_code_owner = "<stem>")`, that region defines a static holding it under the
/// crate's [`code_symbol`], and every region reads it through an `extern` declaration. A
/// `&'static [u8]` constant in each region would be copied into every codegen unit that holds one
/// (a binary of 43.9 instead of 9.5 MB), unless the crate were built with one codegen unit.
pub fn code(stem: &str) -> TokenStream {
    let p = quote!(::taskweave::__private);
    let ptx_cfg = format_ident!("{}", cfg::PTX);
    let owner_cfg = format_ident!("{}", cfg::CODE_OWNER);
    let package = ["CARGO_PKG_NAME", "CARGO_PKG_VERSION", "CARGO_MANIFEST_DIR"]
        .map(|var| std::env::var(var).unwrap_or_default())
        .join("\n");
    let crate_name = std::env::var("CARGO_CRATE_NAME").unwrap_or_default();
    let symbol = code_symbol(&crate_name, &package);
    let bundle_env = env::BUNDLE;
    quote! {{
        #[cfg(#ptx_cfg)]
        let __tw_code = {
            #[cfg(#owner_cfg = #stem)]
            #[unsafe(export_name = #symbol)]
            static __TW_CODE: &[u8] = ::core::include_bytes!(::core::env!(#bundle_env));
            unsafe extern "Rust" {
                #[link_name = #symbol]
                static __TW_SHARED_CODE: &'static [u8];
            }
            // SAFETY: the builder names exactly one region of this crate in `cfg(taskweave_code_owner)`,
            // and that region defines this symbol as an immutable static of this type.
            let bundle = unsafe { __TW_SHARED_CODE };
            ::core::option::Option::Some(#p::host::Code::Bundle(bundle))
        };
        #[cfg(not(#ptx_cfg))]
        let __tw_code: ::core::option::Option<#p::host::Code> = ::core::option::Option::None;
        __tw_code
    }}
}

/// A compile error for a region in the binary target `bin` (cargo's `CARGO_BIN_NAME`) when its
/// package has a device build: the device build compiles the library alone (cargo builds no other
/// target as a `cdylib`), so such a region would have no kernel. Nothing for a library, or for a
/// package with no device build, whose regions run on the CPU backend from any target.
pub fn not_in_a_binary(name: &syn::Ident, bin: Option<&str>) -> TokenStream {
    let Some(bin) = bin else {
        return TokenStream::new();
    };
    let ptx_cfg = format_ident!("{}", cfg::PTX);
    let message = format!(
        "region `{name}` is in the binary `{bin}`, which the device build does not compile, so it would have no GPU kernel: move the region and its tasks into the library (`src/lib.rs` or a module of it) and call it from here"
    );
    let error = quote_spanned!(name.span()=> ::core::compile_error!(#message););
    quote! {
        #[allow(unexpected_cfgs)]
        const _: () = {
            #[cfg(#ptx_cfg)]
            #error
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checked here rather than by a ui case: trybuild cannot give a case the device build's
    /// `cfg(taskweave_ptx)` that turns the error on.
    #[test]
    fn a_region_in_a_binary_is_an_error_naming_the_fix() {
        let name = syn::Ident::new("step", Span::call_site());
        let tokens = not_in_a_binary(&name, Some("app")).to_string();
        assert!(tokens.contains("compile_error"), "{tokens}");
        assert!(tokens.contains("cfg (taskweave_ptx)"), "{tokens}");
        assert!(
            tokens.contains("region `step` is in the binary `app`")
                && tokens.contains("move the region and its tasks into the library"),
            "{tokens}"
        );
        assert!(not_in_a_binary(&name, None).is_empty());
    }

    #[test]
    fn one_dispatch_serves_checked_and_unchecked_kernels() {
        let dispatch = syn::Ident::new("__taskweave_dispatch_step", Span::call_site());
        let tokens = kernels("step_1", &dispatch).to_string();
        for (kernel, instance) in [
            ("taskweave_region_step_1 ", "true"),
            ("taskweave_listed_step_1 ", "true"),
            ("taskweave_levels_step_1 ", "true"),
            ("taskweave_region_step_1__unchecked ", "false"),
            ("taskweave_listed_step_1__unchecked ", "false"),
            ("taskweave_levels_step_1__unchecked ", "false"),
        ] {
            let at = tokens
                .find(kernel)
                .unwrap_or_else(|| panic!("{kernel}: {tokens}"));
            let body = &tokens[at..];
            let body = &body[..body.find("} }").unwrap_or(body.len())];
            assert!(
                body.contains(&format!("__taskweave_dispatch_step :: < {instance} >")),
                "{kernel}: {body}"
            );
        }
    }
}
