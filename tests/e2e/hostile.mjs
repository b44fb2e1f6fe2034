// The hostile-environment page (www/hostile/) end to end: every case must behave as a careful
// user expects (the hostile-environment probes: a huge Retry-After, redirects to another origin, a
// proxy's HTML 400, an omitted principal, a hook that never settles, throwing host values, hooks
// that call back in). The package is already built.
import { runHostilePage } from "../../www/hostile/run.mjs";

const started = performance.now();
const { results, ok } = await runHostilePage({ print: (line) => console.log(`hostile: ${line}`) });
const failed = results.filter((r) => !r.ok).length;
console.log(`e2e hostile: ${results.length - failed} passed, ${failed} failed in ${((performance.now() - started) / 1000).toFixed(1)} s`);
process.exit(ok ? 0 : 1);
