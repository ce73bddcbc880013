/**
 * Generated documentation equals what is committed: the settings table (docs/settings.md, from the settings
 * registry) and the README's command table (from the CLI's definitions). Fix: `npm run generate:docs`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../scripts/build.ts';
import { commandsMarkdownTable, generatedDocs } from '../../scripts/generate-docs.ts';
import { buildProgram } from '../../src/cli/program.ts';
import { SETTINGS } from '../../src/operator/options.ts';

describe('generated docs', () => {
  it('docs/settings.md and the README command table are current (npm run generate:docs)', () => {
    for (const [file, text] of Object.entries(generatedDocs()))
      expect(readFileSync(join(ROOT, file), 'utf8'), `${file} is stale: run npm run generate:docs`).toBe(
        text,
      );
  });

  it('lists every setting and every flag of every command', () => {
    const settings = readFileSync(join(ROOT, 'docs', 'settings.md'), 'utf8');
    for (const s of SETTINGS) expect(settings).toContain(`| \`${s.env}\` | \`--${s.flag}\` |`);
    const table = commandsMarkdownTable();
    const program = buildProgram();
    expect(program.commands.map((c) => c.name()).slice(0, 3)).toEqual(['start', 'simulate', 'controller']);
    for (const c of program.commands)
      for (const o of c.options.filter((x) => !x.hidden)) expect(table).toContain(`\`${o.flags}\``);
  });

  it('--help uses one style: descriptions start lower-case (acronyms and kind names such as NodePool aside)', () => {
    const program = buildProgram();
    const style = /^([a-z$]|[A-Z]{2,}|[A-Z][a-z]+[A-Z])/;
    for (const c of program.commands) {
      expect(c.description(), c.name()).toMatch(style);
      for (const o of c.options) expect(o.description, `${c.name()} ${o.flags}`).toMatch(style);
    }
  });
});
