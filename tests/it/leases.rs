//! The leases example, its assertions run against the emulator: acquire,
//! renew only as the holder, release only as the holder, and a second
//! contender taking an expired lease before garbage collection.

use crate::support;

#[path = "../../examples/leases.rs"]
#[allow(dead_code, unreachable_pub)]
mod example;

use bigtable_ttl::Clock;

#[tokio::test]
async fn the_leases_example_holds() {
    example::demo(support::connection(), Clock::manual_at_now())
        .await
        .unwrap();
}
