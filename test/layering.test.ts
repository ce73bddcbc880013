/**
 * The layering rules of DESIGN.md, checked on the import statements of the tree:
 * - the pure scheduling core (`src/scheduling`) imports only `src/apis` and its own files (no packages, no
 *   `node:` modules, nothing from cloudprovider, state, kube, sim);
 * - `src/controllers` never imports `src/sim` (controllers do not know whether they talk to the embedded
 *   cluster or a real one).
 * Exempt: the `testing.ts` helpers and the `*.test.ts` files (they build fixtures from any layer).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && e.name !== 'testing.ts') out.push(p);
  }
  return out;
}

/** Module specifiers of every static import/export-from and dynamic import in `file`. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/gms)) out.push(m[1]!);
  for (const m of text.matchAll(/^\s*import\s+'([^']+)'/gm)) out.push(m[1]!);
  for (const m of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) out.push(m[1]!);
  return out;
}

/** `spec` resolved to a path relative to the repository root, or the bare specifier for packages. */
function target(file: string, spec: string): string {
  if (!spec.startsWith('.')) return spec;
  return relative(root, resolve(root, dirname(file), spec));
}

describe('layering', () => {
  it('the scheduling core imports only src/apis and its own files', () => {
    const files = sourceFiles('src/scheduling');
    expect(files).toContain(join('src', 'scheduling', 'scheduler.ts'));
    const bad: string[] = [];
    for (const f of files)
      for (const spec of importsOf(f)) {
        const t = target(f, spec);
        if (!t.startsWith('src/scheduling/') && !t.startsWith('src/apis/')) bad.push(`${f} → ${spec}`);
      }
    expect(bad).toEqual([]);
  });

  it('src/controllers never imports src/sim', () => {
    const files = sourceFiles('src/controllers');
    expect(files.length).toBeGreaterThan(10);
    const bad: string[] = [];
    for (const f of files)
      for (const spec of importsOf(f)) if (target(f, spec).startsWith('src/sim/')) bad.push(`${f} → ${spec}`);
    expect(bad).toEqual([]);
  });

  it('the import scanner sees multi-line imports (so the checks above can fail)', () => {
    const specs = importsOf(join('src', 'scheduling', 'scheduler.ts'));
    expect(specs.length).toBeGreaterThan(5);
    expect(specs).toContain('../apis/core.ts');
    expect(target('src/controllers/x.ts', '../sim/cluster.ts')).toBe('src/sim/cluster.ts');
  });
});
