/**
 * Generates the documentation tables that must not drift from the code:
 * - `docs/settings.md`, the settings table, from the settings registry: the core settings (`SETTINGS`,
 *   src/operator/options.ts), then every provider module's (`CONTROLLER_SETTINGS`, src/cli/controller.ts);
 * - the README's command table, from the CLI's definitions (src/cli/program.ts): every command, its flags, docs.
 * Each table sits between `<!-- generated:NAME:begin -->` and `<!-- generated:NAME:end -->` markers; the rest of the
 * file is left as written. test/cli/docs.test.ts checks the committed files equal the generated ones.
 * Usage: `tsx scripts/generate-docs.ts` (rewrites the files), `--check` (exit 1 when they differ).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { CONTROLLER_SETTINGS } from '../src/cli/controller.ts';
import { buildProgram } from '../src/cli/program.ts';
import { settingsMarkdownTable } from '../src/config/settings.ts';
import { DEFAULT_FEATURE_GATES, UPSTREAM_FEATURE_GATES } from '../src/operator/options.ts';
import { ROOT } from './build.ts';

/** Docs page of each command (README column). */
const COMMAND_DOCS: Record<string, string> = {
  start: 'docs/controller.md',
  simulate: 'docs/simulate.md',
  controller: 'docs/controller.md',
  'instance-types': 'docs/catalog.md',
  apiserver: 'docs/apiserver.md',
  doctor: 'docs/doctor.md',
  plan: 'docs/plan.md',
  'bootstrap aws': 'docs/bootstrap.md',
  convert: 'docs/convert.md',
};

/** The README's command table: command, what it does, every flag, docs page. */
export function commandsMarkdownTable(program: Command = buildProgram()): string {
  const esc = (t: string) => t.replace(/\|/g, '\\|');
  // Commands with subcommands (`bootstrap aws`) list each subcommand instead.
  const leaves = program.commands.flatMap((c) =>
    c.commands.length > 0
      ? c.commands.map((s) => ({ name: `${c.name()} ${s.name()}`, c: s }))
      : [{ name: c.name(), c }],
  );
  const rows = leaves.map(({ name, c }) => {
    const flags = c.options.filter((o) => !o.hidden).map((o) => `\`${esc(o.flags)}\``);
    const docs = COMMAND_DOCS[name];
    const settings =
      c.name() === 'controller' ? ' (the settings flags: [docs/settings.md](docs/settings.md))' : '';
    return `| \`capenter ${name}\` | ${esc(c.description())}${settings} | ${flags.join(' ')} | ${docs ? `[${docs}](${docs})` : ''} |`;
  });
  return `${['| command | what it does | flags | docs |', '|---|---|---|---|', ...rows].join('\n')}\n`;
}

/** Replaces the text between the `NAME` markers of `text` with `table`. @throws when the markers are missing. */
export function replaceGenerated(text: string, name: string, table: string): string {
  const begin = `<!-- generated:${name}:begin (scripts/generate-docs.ts; do not edit) -->`;
  const end = `<!-- generated:${name}:end -->`;
  const i = text.indexOf(begin);
  const j = text.indexOf(end);
  if (i < 0 || j < i) throw new Error(`missing markers ${begin} … ${end}`);
  return `${text.slice(0, i + begin.length)}\n${table}${text.slice(j)}`;
}

/**
 * The feature-gate table of docs/settings.md: every upstream gate (`UPSTREAM_FEATURE_GATES`) and capenter's own
 * (`DEFAULT_FEATURE_GATES`), with the default and what capenter does with each value.
 */
export function featureGatesMarkdownTable(): string {
  const names = [...new Set([...Object.keys(UPSTREAM_FEATURE_GATES), ...Object.keys(DEFAULT_FEATURE_GATES)])];
  const rows = names.map((g) => {
    const implemented = g in DEFAULT_FEATURE_GATES;
    const upstream = UPSTREAM_FEATURE_GATES[g];
    const def = implemented ? DEFAULT_FEATURE_GATES[g] : upstream;
    const what = implemented
      ? 'implemented: true and false both work'
      : upstream
        ? `not implemented: ${g}=false is accepted; ${g}=true (upstream's default) is accepted with a warning (capenter runs as false)`
        : `not implemented: ${g}=false is accepted, ${g}=true exits 2`;
    return `| \`${g}\` | \`${def}\` | ${what} |`;
  });
  return `${['| gate | default | in capenter |', '|---|---|---|', ...rows].join('\n')}\n`;
}

/** The generated files: path (relative to the root) → full text. */
export function generatedDocs(): Record<string, string> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const settings = readFileSync(join(ROOT, 'docs', 'settings.md'), 'utf8');
  return {
    'README.md': replaceGenerated(readme, 'commands', commandsMarkdownTable()),
    'docs/settings.md': replaceGenerated(
      replaceGenerated(settings, 'settings', settingsMarkdownTable(CONTROLLER_SETTINGS)),
      'feature-gates',
      featureGatesMarkdownTable(),
    ),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const [file, text] of Object.entries(generatedDocs())) {
    const path = join(ROOT, file);
    if (readFileSync(path, 'utf8') === text) continue;
    stale++;
    if (check) process.stderr.write(`${file} is stale: run npm run generate:docs\n`);
    else {
      writeFileSync(path, text);
      process.stderr.write(`wrote ${file}\n`);
    }
  }
  if (check && stale > 0) process.exit(1);
}
