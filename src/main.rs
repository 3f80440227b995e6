fn main() -> std::process::ExitCode {
    swarm::main()
}
