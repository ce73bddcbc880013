/**
 * One copy of each short string value of decoded API objects.
 *
 * `JSON.parse` gives every string value of every object its own copy (only property names are shared). A cluster
 * of 10,000 pods held in one process (`capenter start`: the embedded API server and the informers of the
 * kube-scheduler, kubelet and workload stand-ins and of the operator) keeps several copies of each pod, and each
 * copy repeats the same values: namespaces, `default-scheduler`, image names, condition types, owner kinds and
 * names, node names, timestamps. On a heap snapshot at 6,857 of 10,000 pods Running, string values were 119 MB of
 * the 251-MB live heap, 75 MB of it extra copies of a value held elsewhere, 61 MB in strings under 32 characters
 * (2026-12-03, Node 24). {@link internStrings} replaces each short string value of a freshly decoded object with
 * the copy a {@link StringTable} already holds: the object is equal, only its memory is shared (strings are
 * immutable, so no reader can tell).
 */

/** Longest string value (UTF-16 code units) that {@link StringTable.intern} shares; longer ones are kept as given. */
export const InternMaxLength = 64;

/**
 * A bounded table of shared strings. Emptied when it reaches `maxEntries` (default 100,000), so that values of
 * deleted objects (names, UIDs) do not stay alive for the life of the process: at most `maxEntries` strings of at
 * most {@link InternMaxLength} characters (under 10 MB) are kept for the table's sake.
 */
export class StringTable {
  private readonly map = new Map<string, string>();

  /**
   * @param maxEntries entries after which the table is emptied
   * @throws RangeError when `maxEntries` is not a whole number of at least 1
   */
  constructor(private readonly maxEntries = 100_000) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1)
      throw new RangeError(`StringTable: maxEntries is ${maxEntries}; give a whole number of at least 1`);
  }

  /** The table's copy of `s` (`s` itself, remembered, when the table had none). */
  intern(s: string): string {
    const have = this.map.get(s);
    if (have !== undefined) return have;
    if (this.map.size >= this.maxEntries) this.map.clear();
    this.map.set(s, s);
    return s;
  }

  /** Number of strings held. */
  get size(): number {
    return this.map.size;
  }
}

/** The process-wide table of {@link internStrings} (shared by every client and the embedded API server). */
export const sharedStrings = new StringTable();

/**
 * Replaces, in place, every string value of at most {@link InternMaxLength} characters inside `value` (a
 * JSON-decoded value: objects, arrays and primitives, no cycles) with `table`'s copy, and returns `value`.
 * Property names are left alone (V8 already shares those). Only for values the caller owns: freshly decoded text
 * that nothing else references.
 */
export function internStrings<T>(value: T, table: StringTable = sharedStrings): T {
  if (typeof value === 'object' && value !== null) internInto(value as Record<string, unknown>, table);
  return value;
}

function internInto(o: Record<string, unknown> | unknown[], table: StringTable): void {
  if (Array.isArray(o)) {
    for (let i = 0; i < o.length; i++) {
      const x = o[i];
      if (typeof x === 'string') {
        if (x.length <= InternMaxLength) o[i] = table.intern(x);
      } else if (typeof x === 'object' && x !== null) internInto(x as Record<string, unknown>, table);
    }
    return;
  }
  for (const k in o) {
    const x = o[k];
    if (typeof x === 'string') {
      if (x.length <= InternMaxLength) o[k] = table.intern(x);
    } else if (typeof x === 'object' && x !== null) internInto(x as Record<string, unknown>, table);
  }
}
