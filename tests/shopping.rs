//! The shopping example, its assertions run against the emulator: a rate
//! limit on a counter, cart items reserved each for its own time, and a
//! partial update that keeps the cart's expiry.

mod support;

#[path = "../examples/shopping.rs"]
#[allow(dead_code, unreachable_pub)]
mod shopping;

use bigtable_ttl::Clock;

#[tokio::test]
async fn the_shopping_example_holds() {
    shopping::demo(support::connection(), Clock::manual_at_now())
        .await
        .unwrap();
}
