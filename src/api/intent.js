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
