//! CPU time of processes from /proc (Linux), for the server benches: the database's share,
//! which the servers' own `process.cpuUsage()` does not include.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);

/**
 * Process `pid`'s name, parent and CPU time (user + system, ms) so far; throws if it is gone.
 * @param {string | number} pid
 */
export function processCpu(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const close = stat.lastIndexOf(')');
  // ppid, utime and stime: fields 4, 14 and 15 of stat, 1, 12 and 13 after the name and state.
  const fields = stat.slice(close + 2).split(' ');
  return { name: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(fields[1]), ms: (Number(fields[11]) + Number(fields[12])) * TICK_MS };
}

/**
 * The postmaster's pid of the cluster in data directory `dir` (its postmaster.pid), or undefined.
 * @param {string} dir
 */
export function postmasterOf(dir) {
  try {
    return Number(readFileSync(`${dir}/postmaster.pid`, 'utf8').split('\n')[0]) || undefined;
  } catch {
    return undefined;
  }
}

/** CPU time (ms) of each running Postgres process (postmaster, backends, background workers)
 * by pid: of the cluster whose postmaster is `postmaster` when given (other clusters on the
 * machine left out), else of every cluster; empty where there is no /proc.
 * @param {number} [postmaster] */
export function postgresCpu(postmaster) {
  const byPid = new Map();
  let pids = [];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return byPid;
  }
  for (const pid of pids) {
    try {
      const { name, ppid, ms } = processCpu(pid);
      if (name === 'postgres' && (postmaster === undefined || Number(pid) === postmaster || ppid === postmaster)) byPid.set(pid, ms);
    } catch {
      // Gone meanwhile.
    }
  }
  return byPid;
}

/** The Postgres processes' CPU time (ms) since `before` ([`postgresCpu`]); a process that
 * started meanwhile counts from zero. @param {Map<string, number>} before @param {number} [postmaster] */
export function postgresCpuSince(before, postmaster) {
  let ms = 0;
  for (const [pid, now] of postgresCpu(postmaster)) ms += now - (before.get(pid) ?? 0);
  return ms;
}
