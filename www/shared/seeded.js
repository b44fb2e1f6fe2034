// Seeded randomness shared by the end-to-end tests (node, www/harness.mjs) and the test pages
// they drive (www/chaos/, www/tabs/), so a printed seed replays the same choices everywhere.

/** A small seeded PRNG (mulberry32): the same seed gives the tests the same choices. */
export function mulberry32(a) {
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
