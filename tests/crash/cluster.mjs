// The Postgres the crash test runs on: CSK_PG_URL or CANVAS_SCHEDULER_TEST_DB (a cluster whose
// user may create databases; scripts/test's server_kit_tests sets both), else a throw-away
// cluster started here with scripts/pg-cluster on 127.0.0.1 and stopped by `stop()` (the caller
// calls it on every exit, failure too). Either way the test gets a fresh, empty database.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freshDatabase } from "../../www/server/testing/test-db.mjs";

const ROOT = new URL("../..", import.meta.url).pathname;
const PG_CLUSTER = join(ROOT, "scripts", "pg-cluster");

/**
 * @param {(line: string) => void} say
 * @returns {Promise<{ url: string, own: boolean, stop: () => void }>}
 */
export async function postgres(say) {
  const given = [process.env.CSK_PG_URL, process.env.CANVAS_SCHEDULER_TEST_DB].find((url) => /^postgres(ql)?:\/\//.test(url ?? ""));
  if (given) return { url: await freshDatabase(given), own: false, stop: () => {} };
  const dir = mkdtempSync(join(tmpdir(), "crash-pg-"));
  chmodSync(dir, 0o755); // the cluster runs as the postgres user when we are root
  const port = 20000 + Math.floor(Math.random() * 20000);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      execFileSync(PG_CLUSTER, ["stop", join(dir, "pg")], { stdio: "inherit", timeout: 60_000 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    execFileSync(PG_CLUSTER, ["start", join(dir, "pg"), String(port)], { stdio: "inherit", timeout: 60_000 });
    say(`throw-away Postgres cluster on 127.0.0.1:${port} (${dir})`);
    return { url: await freshDatabase(`postgres://postgres@127.0.0.1:${port}/postgres`), own: true, stop };
  } catch (error) {
    stop();
    throw error;
  }
}
