//! Property tests: every queue against its reference model in `kcache-testing`.

use kcache_testing::{
    check_delta_fifo_against_model, check_fifo_against_model, check_real_fifo_against_model,
    check_work_queue_against_model, queue_ops, work_queue_ops,
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

    /// client-go's work queue semantics (`queue.go`, `delaying_queue.go`,
    /// `rate_limiting_queue.go`) against `WorkQueueModel`, under paused time.
    #[test]
    fn work_queue_matches_model(ops in work_queue_ops()) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(check_work_queue_against_model(&ops))?;
    }
}
