// Several tabs on one ledger in a browser without Web Locks ("Without Web Locks, the
// lease alone decides"): the scenario of tabs.mjs (three tabs, the leader closed and then
// crashed mid-burst, every acknowledged operation applied exactly once and in order, at most
// one leader at any sample) with `navigator.locks` hidden from every page. Replay with
// TABS_NO_LOCKS=1 TABS_SEED=<n> node tests/e2e/tabs.mjs.
process.env.TABS_NO_LOCKS = "1";
await import("./tabs.mjs");
