//! The macros of taskweave: [`task`](macro@task) and [`task_region!`].
//!
//! Both are re-exported by the `taskweave` crate; depend on that, not on this one.

mod expand;
mod model;
mod parse;
mod writes;

use proc_macro::TokenStream;
use quote::quote;
use taskweave_names::env;

/// Declares a task: a function that runs on one block of threads, with the array ranges it reads
/// and writes.
///
/// # Grammar
/// ```text
/// #[task]                     no ranges: every access is inferred from the parameter types
/// #[task( entry, … )]
/// entry  := ("reads" | "writes") "=" access
///         | ("reads" | "writes") "=" "[" access, … "]"
/// access := array "[" lo ".." hi "]"      half-open; `lo..=hi`, `lo..`, `..hi` and `..` also work
/// ```
/// - Each `array` names a parameter of type `&[T]` (read-only) or `&mut [T]` (read-write). Keys may
///   repeat; the same range under `reads` and `writes` is a read-write (`inout`) access.
/// - `lo` and `hi` are `usize` expressions over the task's scalar parameters and constants.
/// - Other parameters are scalars: integers, floats, `bool` or `char`, captured by value at spawn
///   time. One optional `&Block` parameter gives the body the [block API](../taskweave/struct.Block.html).
/// - A spawn may pass one array to several `&[T]` parameters, but an array passed to a `&mut [T]`
///   parameter must reach the task through no other parameter: two views of one array would let
///   the body write an element through one while holding a reference to it from the other. Such a
///   spawn fails inspection with `Error::AliasedArray`; pass the array once and declare all its
///   ranges on that parameter.
///
/// # Inferred accesses
/// A task that declares no ranges (`#[task]` or `#[task()]`) gets its accesses from its signature,
/// over whole arrays, as GrCUDA infers a kernel's dependences from its arguments: a `&[T]` parameter
/// reads all of its array and a `&mut [T]` parameter reads and writes all of it. Tasks that only
/// read an array run concurrently; a task that may write it waits for the last writer and for every
/// reader since. Once a task declares any range it declares them all: an array missing from a
/// partial spec is an error, not an inferred access, so that adding one range to a task never
/// silently widens what it touches.
///
/// ```ignore
/// /// `y[i] += x[i]` over the whole arrays: reads `x`, reads and writes `y`.
/// #[task]
/// fn axpy(b: &Block, x: &[f32], y: &mut [f32]) {
///     b.par_for(0..y.len(), |i| y[i] += x[i]);
/// }
/// ```
///
/// # What it checks
/// Every array parameter of a task with a spec has a declared access; a `&[T]` parameter is never written (its view has no
/// write method); scalars are [`Scalar`](../taskweave/trait.Scalar.html)s; the function is not
/// generic, `async`, `const`, and returns nothing. At inspection, no array of a `&mut [T]` parameter
/// is passed to another parameter of the same spawn. In checked mode (the default) each index is
/// tested against the declared ranges at run time.
///
/// # Example
/// ```ignore
/// use taskweave::{task, Block};
///
/// /// `out[i] = in[i] * k` over one tile of `n` elements.
/// #[task(reads = x[t * n..(t + 1) * n], writes = y[t * n..(t + 1) * n])]
/// fn scale(b: &Block, x: &[f32], y: &mut [f32], t: usize, n: usize, k: f32) {
///     b.par_for(t * n..(t + 1) * n, |i| y[i] = x[i] * k);
/// }
/// ```
#[proc_macro_attribute]
pub fn task(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::task::expand(attr.into(), item.into()).into()
}

/// Declares a region: ordinary host control flow that spawns tasks.
///
/// # Grammar
/// ```text
/// task_region! {
///     [attributes] [pub] fn name( param, … ) { body }
/// }
/// param := ident ":" "&mut [T]"   an array copied to the device and back
///        | ident ":" "&[T]"       an array copied to the device
///        | ident ":" Type         a `Copy` scalar for the control flow
/// body  := Rust statements; `spawn!(task(args…))` records one task
/// ```
/// Inside the body each array parameter is an [`ArrayArg`](../taskweave_host/inspect/struct.ArrayArg.html)
/// handle: pass it to tasks, or ask its `len()`. The body runs on the host as *inspection code*: it
/// records tasks and their dependences but runs no task.
///
/// Calling the region returns a [`Region`](../taskweave/struct.Region.html); set options on it and
/// `run` it on a [`Runtime`](../taskweave/struct.Runtime.html). On the GPU the macro also emits the
/// region's kernel, `taskweave_region_<name>`, whose persistent workers run the DAG.
///
/// # Example
/// ```ignore
/// task_region! {
///     /// Scales `x` into `y`, one task per tile.
///     pub fn scale_all(x: &[f32], y: &mut [f32], n: usize, k: f32) {
///         for t in 0..x.len() / n {
///             spawn!(scale(x, y, t, n, k));
///         }
///     }
/// }
/// let report = scale_all(&x, &mut y, 256, 2.0).run(&taskweave::Runtime::new())?;
/// ```
#[proc_macro]
pub fn task_region(input: TokenStream) -> TokenStream {
    expand::region::expand(input.into()).into()
}

/// The kernel bundle that `taskweave_build` made for the calling crate, as a `taskweave::gpu::Code`
/// (every region's cubins and PTX, which the runtime loads a kernel at a time). Call it in a crate
/// whose `build.rs` runs `taskweave_build::Builder` (regions embed it themselves), for kernels of
/// your own outside any region: `gpu.function(CODE, "my_kernel")`.
#[proc_macro]
pub fn include_kernels(input: TokenStream) -> TokenStream {
    let input = proc_macro2::TokenStream::from(input);
    if !input.is_empty() {
        return syn::Error::new_spanned(input, "`include_kernels!` takes no arguments")
            .to_compile_error()
            .into();
    }
    let var = env::BUNDLE;
    quote!(::taskweave::gpu::Code::Bundle(::core::include_bytes!(
        ::core::env!(#var)
    )))
    .into()
}
