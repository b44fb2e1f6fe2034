// The JS side of the API boundary: the few things the API layer does in JS because doing them
// through the bindings costs a crossing into JS per step. One module for both: every snippet
// is one more module the page fetches before the scheduler can load.

// An intent's fields in one call, where reading each through the bindings crossed into JS
// about twenty times per intent (keys, their text, each field). Only reads: every check on
// the values stays in Rust (src/api/intent.rs).
//
// Returns `null` when `value` is not an object (or is an array), `false` when its keys cannot
// be listed (a throwing proxy), the first key not in `names` (a string), or else an array of
// the values of `names` in order followed by a bitmask of the ones whose read threw.
export function intentFields(value, names) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  let keys;
  try {
    keys = Object.keys(value);
  } catch {
    return false;
  }
  for (const key of keys) if (!names.includes(key)) return key;
  const fields = [];
  let unreadable = 0;
  for (let i = 0; i < names.length; i++) {
    try {
      fields.push(value[names[i]]);
    } catch {
      fields.push(undefined);
      unreadable |= 1 << i;
    }
  }
  fields.push(unreadable);
  return fields;
}

// A promise and the two functions that settle it, made in JS: `new Promise(executor)` from
// Rust calls back into the module to run the executor, about 8 µs of every enqueue's 0.7 ms.
export function deferred() {
  let settle;
  const promise = new Promise((resolve, reject) => {
    settle = [resolve, reject];
  });
  return [promise, settle[0], settle[1]];
}
