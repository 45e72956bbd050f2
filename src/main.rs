//! The `w6w-sim` binary: see `w6w_sim::cli`.

/// D-181: the binary allocates through mimalloc; the library leaves the choice to its user.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    w6w_sim::cli::main()
}
