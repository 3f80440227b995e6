//! Table tests of the core: a state, an input, the effects that follow.

use std::time::Duration;

use super::backoff;

#[test]
fn backoff_grows_and_is_capped() {
    let b = Duration::from_secs(1);
    let mut rng = fastrand::Rng::with_seed(7);
    assert!(backoff(b, 1, &mut rng) <= Duration::from_millis(1200));
    assert!(backoff(b, 3, &mut rng) >= Duration::from_millis(3200));
    assert!(backoff(b, 30, &mut rng) <= Duration::from_secs(72));
}
