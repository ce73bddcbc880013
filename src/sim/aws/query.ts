/**
 * Helpers of the emulator proxy's own EC2 Query-API fills (`placementgroups.ts`, `reservations.ts`): reading the
 * `Filter.N.*` parameters of a request form and escaping text for the XML answers.
 */

/** `s` escaped for an XML text node or attribute (`<`, `>`, `&`, `"`, `'` as numeric character references). */
export function xmlEscape(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The `Filter.N.Name` → `Filter.N.Value.M` values of an EC2 query form (a filter without values maps to `[]`). */
export function formFilters(form: URLSearchParams): Map<string, string[]> {
  const names = new Map<string, string>();
  const values = new Map<string, string[]>();
  for (const [k, v] of form) {
    const n = /^Filter\.(\d+)\.Name$/.exec(k);
    if (n) names.set(n[1]!, v);
    const m = /^Filter\.(\d+)\.Value\.\d+$/.exec(k);
    if (m) values.set(m[1]!, [...(values.get(m[1]!) ?? []), v]);
  }
  const out = new Map<string, string[]>();
  for (const [i, name] of names) out.set(name, values.get(i) ?? []);
  return out;
}
