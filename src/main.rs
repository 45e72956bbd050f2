//! The `w6w-sim` binary: the CLI lives in the library (`src/cli/`), reached through
//! `w6w_sim::__internals::cli_main` (not API, D-311).

/// D-181: the binary allocates through mimalloc; the library leaves the choice to its user.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    w6w_sim::__internals::cli_main()
}
