//! The start-up baseline for the benchmark: the smallest Rust program that prints a line.

fn main() {
    println!("hello");
}
