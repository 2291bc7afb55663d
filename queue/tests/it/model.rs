//! Property tests: every queue against its reference model in `kcache-testing`.

use kcache_testing::{
    check_delta_fifo_against_model, check_fifo_against_model, check_real_fifo_against_model,
    queue_ops,
};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        rng_seed: RngSeed::Fixed(0x0071_7565_7565),
        ..ProptestConfig::default()
    })]

    #[test]
    fn delta_fifo_matches_model(ops in queue_ops()) {
        check_delta_fifo_against_model(&ops)?;
    }

    #[test]
    fn real_fifo_matches_model(ops in queue_ops()) {
        check_real_fifo_against_model(&ops)?;
    }

    #[test]
    fn fifo_matches_model(ops in queue_ops()) {
        check_fifo_against_model(&ops)?;
    }
}
