// Fault injection for the /requests routes, switchable at run time through the admin API.
//
// Every protocol request draws exactly three numbers from a seeded PRNG, whatever the rates, so
// the n-th request of a run meets the same fate for the same seed and configuration: a failing
// run can be replayed exactly.

/**
 * @typedef {object} FaultConfig
 * @property {number} latencyMs Delay before a protocol request is handled.
 * @property {number} dropAfterApplyRate Chance that a submit deciding a new key is committed and
 *   then its socket destroyed without an answer.
 * @property {number} serverErrorRate Chance of answering 503 without handling the request.
 * @property {number} tooManyRate Chance of answering 429 (with Retry-After) without handling it.
 * @property {number} retryAfterSeconds Retry-After sent with 429 and 503.
 * @property {boolean} offline Destroy every protocol socket at once.
 * @property {boolean} proxyRefusal Answer every protocol request 400 with an HTML body, as a
 *   misconfigured proxy in front of the endpoint would: no v1 body, so the client dead-letters
 *   the request at once (docs/protocol.md) instead of retrying it as an outage.
 * @property {boolean} writeOutage The write path is down while reads work: every submit is
 *   answered 503 with `Retry-After: retryAfterSeconds` (0 is a load shedder's usual answer),
 *   every query as usual (404 for a key never received).
 * @property {boolean} fullOutage Every protocol request answered 503 without Retry-After.
 * @property {number} flapDownMs With `flapUpMs`, a flapping endpoint: a full outage for this
 *   long, then up for `flapUpMs`, over and over, from the moment either was last set (0: off).
 * @property {number} flapUpMs See `flapDownMs`.
 * @property {string[]} poisonOperations A submit whose body holds one of these operation ids is
 *   answered 503 (no Retry-After, nothing applied) every time, while the others succeed: a
 *   request the server refuses on its own (poison).
 * @property {number} seed PRNG seed (unsigned 32-bit).
 */

/** @type {Readonly<FaultConfig>} */
export const DEFAULT_FAULTS = Object.freeze({
  latencyMs: 0,
  dropAfterApplyRate: 0,
  serverErrorRate: 0,
  tooManyRate: 0,
  retryAfterSeconds: 1,
  offline: false,
  proxyRefusal: false,
  writeOutage: false,
  fullOutage: false,
  flapDownMs: 0,
  flapUpMs: 0,
  poisonOperations: Object.freeze([]),
  seed: 1,
});

const RATE_FIELDS = ['dropAfterApplyRate', 'serverErrorRate', 'tooManyRate'];
const MAX_LATENCY_MS = 60_000;
const MAX_RETRY_AFTER_SECONDS = 3_600;
const MAX_FLAP_MS = 3_600_000;
const MAX_POISONED = 1_000;
/** The most submit arrivals kept, over all keys (the oldest keys are forgotten first). */
const MAX_ARRIVAL_KEYS = 10_000;
const MAX_ARRIVALS_PER_KEY = 1_000;

/** A validation failure of a fault configuration (answered 400 by the admin API). */
export class FaultConfigError extends Error {
  constructor(message) {
    super(message);
    this.name = 'FaultConfigError';
  }
}

/**
 * Checks a partial configuration; unknown fields are refused so a typo is not silently ignored.
 *
 * @param {unknown} partial
 * @returns {Partial<FaultConfig>}
 * @throws {FaultConfigError}
 */
export function validateFaults(partial) {
  if (typeof partial !== 'object' || partial === null || Array.isArray(partial)) {
    throw new FaultConfigError('fault configuration must be a JSON object');
  }
  const out = {};
  for (const [key, value] of Object.entries(partial)) {
    if (RATE_FIELDS.includes(key)) {
      if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
        throw new FaultConfigError(`${key} must be a number in [0, 1]`);
      }
    } else if (key === 'latencyMs') {
      if (!Number.isSafeInteger(value) || value < 0 || value > MAX_LATENCY_MS) {
        throw new FaultConfigError(`latencyMs must be an integer in [0, ${MAX_LATENCY_MS}]`);
      }
    } else if (key === 'retryAfterSeconds') {
      if (!Number.isSafeInteger(value) || value < 0 || value > MAX_RETRY_AFTER_SECONDS) {
        throw new FaultConfigError(`retryAfterSeconds must be an integer in [0, ${MAX_RETRY_AFTER_SECONDS}]`);
      }
    } else if (key === 'flapDownMs' || key === 'flapUpMs') {
      if (!Number.isSafeInteger(value) || value < 0 || value > MAX_FLAP_MS) {
        throw new FaultConfigError(`${key} must be an integer in [0, ${MAX_FLAP_MS}]`);
      }
    } else if (key === 'poisonOperations') {
      if (
        !Array.isArray(value) ||
        value.length > MAX_POISONED ||
        !value.every((id) => typeof id === 'string' && id.length > 0 && id.length <= 256)
      ) {
        throw new FaultConfigError(`poisonOperations must be an array of at most ${MAX_POISONED} ids`);
      }
    } else if (key === 'offline' || key === 'proxyRefusal' || key === 'writeOutage' || key === 'fullOutage') {
      if (typeof value !== 'boolean') throw new FaultConfigError(`${key} must be a boolean`);
    } else if (key === 'seed') {
      if (!Number.isSafeInteger(value) || value < 0 || value > 0xffffffff) {
        throw new FaultConfigError('seed must be an integer in [0, 2^32 - 1]');
      }
    } else {
      throw new FaultConfigError(`unknown fault setting ${key}`);
    }
    out[key] = key === 'poisonOperations' ? Object.freeze([...value]) : value;
  }
  return out;
}

/**
 * mulberry32: a tiny, well-distributed 32-bit PRNG; plenty for fault dice, and reproducible.
 *
 * @param {number} seed
 * @returns {() => number} Uniform numbers in [0, 1).
 */
export function mulberry32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * @typedef {object} Fate What the dice decided for one protocol request.
 * @property {boolean} serverError Answer 503.
 * @property {boolean} tooMany Answer 429 (only when not serverError).
 * @property {boolean} dropAfterApply Destroy the socket after committing a new key.
 */

/**
 * Creates an injector holding the live configuration, the PRNG and counters of what it did.
 *
 * @param {Partial<FaultConfig>} [initial]
 */
export function createFaultInjector(initial = {}, now = () => Date.now()) {
  /** @type {FaultConfig} */
  let config = { ...DEFAULT_FAULTS, ...validateFaults(initial) };
  let random = mulberry32(config.seed);
  let counters = freshCounters();
  let flapSince = now();
  /** Idempotency key → arrival times (ms, this server's clock) of its submits, in order. */
  let arrivals = new Map();

  function freshCounters() {
    return { draws: 0, serverErrors: 0, tooMany: 0, dropped: 0, offlineDestroyed: 0, outage: 0, poisoned: 0 };
  }

  /** True while a flapping endpoint is in its down phase. */
  function flappingDown() {
    const { flapDownMs: down, flapUpMs: up } = config;
    if (down === 0 || up === 0) return false;
    return (now() - flapSince) % (down + up) < down;
  }

  return {
    /** @returns {FaultConfig} A copy of the live configuration. */
    config: () => ({ ...config }),

    /** @returns {object} A copy of the counters. */
    counters: () => ({ ...counters }),

    /**
     * Merges a partial configuration. A `seed` in it restarts the PRNG from that seed.
     *
     * @param {unknown} partial
     * @returns {FaultConfig}
     * @throws {FaultConfigError}
     */
    update(partial) {
      const valid = validateFaults(partial);
      config = { ...config, ...valid };
      if ('seed' in valid) random = mulberry32(config.seed);
      if ('flapDownMs' in valid || 'flapUpMs' in valid) flapSince = now();
      return { ...config };
    },

    /** Back to the defaults (plus `initial`), PRNG and counters restarted. */
    reset() {
      config = { ...DEFAULT_FAULTS, ...validateFaults(initial) };
      random = mulberry32(config.seed);
      counters = freshCounters();
      flapSince = now();
      arrivals = new Map();
    },

    /**
     * The outage a protocol request meets now, if any: `{retryAfter}` (seconds, or null for no
     * Retry-After header) for a 503, or null when the endpoint is up for it.
     *
     * @param {boolean} isSubmit
     * @returns {{retryAfter: number | null} | null}
     */
    outage(isSubmit) {
      let answer = null;
      if (config.fullOutage || flappingDown()) answer = { retryAfter: null };
      else if (config.writeOutage && isSubmit) answer = { retryAfter: config.retryAfterSeconds };
      if (answer) counters.outage += 1;
      return answer;
    },

    /**
     * Whether a submit of these operations is refused as poison (counted when it is).
     *
     * @param {readonly string[]} operationIds
     */
    poisoned(operationIds) {
      if (config.poisonOperations.length === 0) return false;
      const hit = operationIds.some((id) => config.poisonOperations.includes(id));
      if (hit) counters.poisoned += 1;
      return hit;
    },

    /**
     * Notes a submit's arrival (before any fault), bounded in keys and times a key.
     *
     * @param {string} key
     */
    noteSubmit(key) {
      let times = arrivals.get(key);
      if (!times) {
        if (arrivals.size >= MAX_ARRIVAL_KEYS) arrivals.delete(arrivals.keys().next().value);
        times = [];
        arrivals.set(key, times);
      }
      if (times.length < MAX_ARRIVALS_PER_KEY) times.push(now());
    },

    /** @returns {Record<string, number[]>} Submit arrival times by idempotency key. */
    arrivals: () => Object.fromEntries([...arrivals].map(([key, times]) => [key, [...times]])),

    /**
     * Rolls the dice for one protocol request (always three draws).
     *
     * @returns {Fate}
     */
    draw() {
      const a = random();
      const b = random();
      const c = random();
      counters.draws += 1;
      const serverError = a < config.serverErrorRate;
      const tooMany = !serverError && b < config.tooManyRate;
      if (serverError) counters.serverErrors += 1;
      if (tooMany) counters.tooMany += 1;
      return { serverError, tooMany, dropAfterApply: c < config.dropAfterApplyRate };
    },

    /** Notes a socket destroyed after a committed submit. */
    noteDropped() {
      counters.dropped += 1;
    },

    /** Notes a socket destroyed because the server plays offline. */
    noteOffline() {
      counters.offlineDestroyed += 1;
    },
  };
}
