// @ts-check
// The JS side of the API boundary: the few things the API layer does in JS because doing them
// through the bindings costs a crossing into JS per step. One module for both: every snippet
// is one more module the page fetches before the scheduler can load.

// An intent's fields in one call, where reading each through the bindings crossed into JS
// about twenty times per intent (keys, their text, each field). Only reads: every check on
// the values stays in Rust (src/api/intent.rs). Every read of the host's value happens here,
// inside a `try`: a revoked Proxy, a throwing trap or getter becomes an answer, never an
// exception through the module.
//
// Returns `null` when `value` is not an object (or is an array), `false` when its keys cannot
// be listed (a throwing proxy), the first key not in `names` (a string), or else an array of
// the values of `names` in order followed by a bitmask of the ones whose read threw. A value
// at one of the `lists` indexes that is an array is copied into a fresh array of at most
// `limit` items (its length and items read here too).
/**
 * @param {any} value
 * @param {string[]} names
 * @param {number[]} lists
 * @param {number} limit
 */
export function intentFields(value, names, lists, limit) {
  let keys;
  try {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
    keys = Object.keys(value);
  } catch {
    return false;
  }
  for (const key of keys) if (!names.includes(key)) return key;
  const fields = [];
  let unreadable = 0;
  for (let i = 0; i < names.length; i++) {
    try {
      let field = value[names[i]];
      if (lists.includes(i) && Array.isArray(field)) {
        const length = Math.min(Number(field.length) || 0, limit);
        const copy = [];
        for (let at = 0; at < length; at++) copy.push(field[at]);
        field = copy;
      }
      fields.push(field);
    } catch {
      fields.push(undefined);
      unreadable |= 1 << i;
    }
  }
  fields.push(unreadable);
  return fields;
}

// What kind of JSON container a host value is, read where a throw is caught (a revoked
// Proxy's `Array.isArray`, a `getPrototypeOf` trap): 1 array, 2 plain object (prototype
// `Object.prototype` or `null`), 0 anything else, -1 unreadable.
/** @param {unknown} value */
export function jsonShape(value) {
  try {
    if (Array.isArray(value)) return 1;
    const proto = Object.getPrototypeOf(value);
    return proto === null || proto === Object.prototype ? 2 : 0;
  } catch {
    return -1;
  }
}

// Whether a string is well-formed UTF-16 (no lone surrogate), asked only of a string whose
// conversion to UTF-8 holds U+FFFD: that conversion silently replaces a lone surrogate.
/** @param {string & { isWellFormed?: () => boolean }} text */
export function wellFormed(text) {
  return typeof text.isWellFormed === "function" ? text.isWellFormed() : !/\p{Cs}/u.test(text);
}

// Calls `hook(...args)` and settles with `[0, value]`, `[1, thrown]`, or `[2]` when it has not
// settled within `ms` (0: no limit): a host hook that never settles holds nothing. What the call throws and
// what its answer does (a thenable whose `then` throws or never calls back) is caught here, and
// a late settlement lands in a promise nobody reads.
/**
 * @param {(...args: unknown[]) => unknown} hook
 * @param {unknown[]} args
 * @param {number} ms
 * @returns {Promise<[number, unknown?]>}
 */
export function bounded(hook, args, ms) {
  return new Promise((resolve) => {
    const timer = ms > 0 ? setTimeout(() => resolve([2]), ms) : undefined;
    const done = (/** @type {number} */ kind) => (/** @type {unknown} */ value) => {
      clearTimeout(timer);
      resolve([kind, value]);
    };
    try {
      Promise.resolve(hook(...args)).then(done(0), done(1));
    } catch (thrown) {
      done(1)(thrown);
    }
  });
}

// A promise and the two functions that settle it, made in JS: `new Promise(executor)` from
// Rust calls back into the module to run the executor, about 8 µs of every enqueue's 0.7 ms.
export function deferred() {
  /** @type {(value: unknown) => void} */
  let resolve = () => {};
  /** @type {(reason: unknown) => void} */
  let reject = () => {};
  const promise = new Promise((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return [promise, resolve, reject];
}

// A genuine Blob's `[type, size, name]` (`name` a File's, else undefined), read through the
// platform's own getters: a Proxy or an object dressed as a Blob fails their brand check, and
// an own getter on the instance is never run. `null` for anything that is not a Blob.
/**
 * @param {{ prototype: object }} cls
 * @param {string} key
 * @returns {(this: unknown) => unknown}
 */
const getter = (cls, key) => {
  const get = Object.getOwnPropertyDescriptor(cls.prototype, key)?.get;
  if (get === undefined) throw new TypeError(`no getter ${key}`);
  return get;
};
/** @param {unknown} value */
export function blobFacts(value) {
  try {
    const type = getter(Blob, "type").call(value);
    const size = getter(Blob, "size").call(value);
    let name;
    try {
      if (typeof File === "function") name = getter(File, "name").call(value);
    } catch {
      // A Blob that is not a File has no name.
    }
    return [type, size, name];
  } catch {
    return null;
  }
}

// What host code threw, as `[name, message]` (an Error's, each a string or undefined; a thrown
// string is its own message), read where a throw (a getter, a Proxy trap) is caught; `null` for
// anything else.
/** @param {unknown} thrown */
export function thrownText(thrown) {
  try {
    if (typeof thrown === "string") return [undefined, thrown];
    if (!(thrown instanceof Error)) return null;
    const { name, message } = thrown;
    return [typeof name === "string" ? name : undefined, typeof message === "string" ? message : undefined];
  } catch {
    return null;
  }
}

// Whether a hook's answer is a Promise (a Proxy whose trap throws is not).
/** @param {unknown} value */
export function isPromise(value) {
  try {
    return value instanceof Promise;
  } catch {
    return false;
  }
}
