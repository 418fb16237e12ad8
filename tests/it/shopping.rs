//! The shopping example, its assertions run against the emulator: a rate
//! limit on a counter, cart items reserved each for its own time, and a
//! partial update that keeps the cart's expiry.

use crate::support;

#[path = "../../examples/shopping.rs"]
#[allow(dead_code, unreachable_pub)]
mod example;

use bigtable_ttl::Clock;

#[tokio::test]
async fn the_shopping_example_holds() {
    example::demo(support::connection(), Clock::manual_at_now())
        .await
        .unwrap();
}
