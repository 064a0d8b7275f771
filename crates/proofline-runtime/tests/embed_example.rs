//! Runs `examples/embed_porep.rs` (the typed embedding API on the 2KiB fixture, its proof checked
//! with `verify_seal`) as part of the test suite, so the example cannot rot.

#[path = "../examples/embed_porep.rs"]
#[allow(dead_code)] // the example's `main`
mod embed_porep;

#[test]
fn the_embedding_example_proves_the_2kib_fixture() {
    if let Err(e) = embed_porep::run() {
        panic!("the embedding example failed: {e}");
    }
}
