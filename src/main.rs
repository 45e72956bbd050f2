//! The `w6w-sim` binary: see `w6w_sim::cli`.

fn main() -> std::process::ExitCode {
    w6w_sim::cli::main()
}
