/**
 * What the docs say about `start` and `simulate` is what the program does (issue 26 item 7: docs/controller.md
 * said `start` still applies the valid objects of an invalid input; docs/simulate.md said the disruption pass
 * time is the wall clock while `--now` sets it). Each claim is checked against a run of the command. The day-two
 * docs (upgrade, uninstall, migrate-from-karpenter, convert, capi, capa-guide) are scanned for `capenter` commands: each must
 * name a real command and only its flags; docs/convert.md's example must be what `convert` prints.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../scripts/build.ts';
import { runConvert } from '../../src/cli/convert.ts';
import { buildProgram } from '../../src/cli/program.ts';
import { runSimulate } from '../../src/cli/simulate.ts';
import { runStart } from '../../src/cli/start.ts';

const doc = (name: string) => readFileSync(join(ROOT, 'docs', name), 'utf8').replace(/\s+/g, ' ');

describe('docs match the program', () => {
  const dir = mkdtempSync(join(tmpdir(), 'capenter-docs-claims-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('start: an invalid manifest starts nothing (docs/controller.md)', async () => {
    const file = join(dir, 'mixed.yaml');
    writeFileSync(
      file,
      [
        'apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\nspec: {containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]}',
        'apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: [{name: c, image: nginx, resources: {requests: {cpu: lots}}}]}',
      ].join('\n---\n'),
    );
    let err = '';
    const code = await runStart(
      { filename: [file], exitWhenSettled: true, timeout: '5', logLevel: 'silent' },
      { stdout: () => {}, stderr: (t) => (err += t) },
    );
    expect(code).toBe(2);
    expect(err).toContain('capenter: 1 invalid input(s); nothing started');
    expect(err).not.toContain('embedded cluster at');
    expect(err).not.toContain('applied');
    const controller = doc('controller.md');
    expect(controller).not.toContain('valid objects are still applied');
    expect(controller).toContain('An invalid manifest stops `start` before anything starts');
    expect(controller).toContain('`N invalid input(s); nothing started`');
  });

  it('simulate --disruption: --now sets the pass time, and the answers the doc gives for it hold', async () => {
    const simulate = doc('simulate.md');
    for (const sentence of simulate.split(/(?<=\.) /).filter((s) => /pass time|wall clock/.test(s)))
      expect(sentence, 'a sentence about the pass time names --now').toContain('`--now`');
    expect(simulate).toContain('pass `--now 2026-11-29T16:51:30Z` to get the answer above on any day');
    const pass = async (now: string) => {
      let out = '';
      const code = await runSimulate(
        {
          filenames: [join(ROOT, 'examples', 'microservices-demo-scaled')],
          disruption: true,
          now,
          output: 'json',
        },
        { stdout: (t) => (out += t), stderr: () => {} },
      );
      expect(code).toBe(0);
      const j = JSON.parse(out) as { disruption: { commands: Array<{ reason: string }> } };
      return j.disruption.commands.map((c) => c.reason);
    };
    expect(await pass('2026-11-29T16:51:30Z')).toEqual(['Empty']);
    expect(await pass('2026-12-29T16:50:54Z')).toEqual(['Expired', 'Expired', 'Expired', 'Expired']);
  });

  it('every `capenter` command in the day-two docs names a real command and only its flags', () => {
    const program = buildProgram();
    const checked: string[] = [];
    for (const file of DAY_TWO_DOCS) {
      const text = readFileSync(join(ROOT, 'docs', file), 'utf8');
      for (const cmd of capenterCommands(text)) {
        const problem = checkCommand(program, cmd);
        expect(problem, `docs/${file}: capenter ${cmd}`).toBeUndefined();
        checked.push(`${file}: ${cmd}`);
      }
    }
    // the scan finds what the docs show (a scanner that finds nothing would pass anything)
    expect(checked).toContain('upgrade.md: doctor --kubeconfig prod.kubeconfig');
    expect(checked).toContain('uninstall.md: bootstrap aws --cluster-name prod --delete');
    expect(checked).toContain('convert.md: convert -f nodepools.yaml -f classes.yaml -o json');
    expect(checked).toContain('capi.md: start --capi --exit-when-settled');
    const guide = checked.filter((c) => c.startsWith('capa-guide.md:')).map((c) => c.replace(/\s+/g, ' '));
    expect(guide).toContain(
      'capa-guide.md: controller --kubeconfig workload.kubeconfig --capi-management-kubeconfig mgmt.kubeconfig --cloud-provider aws --cluster-name demo --region eu-west-1 --install-crds --eks-control-plane=false --cluster-endpoint https://demo-apiserver.example.com:6443',
    );
    expect(guide).toContain(
      'capa-guide.md: bootstrap aws --cluster-name demo --capi-kubeconfig mgmt.kubeconfig --capi-cluster team-a/demo --dry-run -o json',
    );
    expect(guide).toHaveLength(7);
    expect(checkCommand(program, 'convert --no-such-flag')).toBe('unknown flag --no-such-flag');
    expect(checkCommand(program, 'uninstall')).toBe('unknown command "uninstall"');
  });

  it('docs/convert.md: the example output is what `capenter convert` prints for the example input', async () => {
    const text = readFileSync(join(ROOT, 'docs', 'convert.md'), 'utf8');
    const example = text.slice(
      text.indexOf('## Example'),
      text.indexOf('\n## ', text.indexOf('## Example') + 1),
    );
    const blocks = [...example.matchAll(/```(yaml|text)\n([\s\S]*?)\n```/g)].map((m) => m[2] ?? '');
    expect(blocks).toHaveLength(3);
    const file = join(dir, 'in.yaml');
    writeFileSync(file, `${blocks[0]}\n`);
    let out = '';
    let err = '';
    const code = await runConvert(
      { filename: [file] },
      { stdout: (t) => (out += t), stderr: (t) => (err += t) },
    );
    expect(code).toBe(0);
    expect(out.trimEnd()).toBe(blocks[1]);
    expect(err.trimEnd()).toBe(blocks[2]);
    expect(out).toContain('name: default-batch');
  });
});

/** The docs whose `capenter` commands are checked against the CLI. */
const DAY_TWO_DOCS = [
  'upgrade.md',
  'uninstall.md',
  'migrate-from-karpenter.md',
  'convert.md',
  'capi.md',
  'capa-guide.md',
];

/**
 * The `capenter …` commands of a Markdown text (arguments only, without `capenter`): lines of ```bash/```sh blocks
 * that start with it (after `npx` or `VAR=value` prefixes; `\` continuations joined, `#` comments dropped) and
 * inline code spans that start with it.
 */
function capenterCommands(md: string): string[] {
  const out: string[] = [];
  for (const m of md.matchAll(/```(?:bash|sh)\n([\s\S]*?)```/g)) {
    const lines = (m[1] ?? '').replace(/\\\n\s*/g, ' ').split('\n');
    for (const line of lines) {
      const cmd = /^\s*(?:[A-Z_]+=\S+\s+)*(?:npx\s+)?capenter\s+(.*)$/.exec(line.replace(/\s#.*$/, ''));
      if (cmd?.[1]) out.push(cmd[1].trim());
    }
  }
  for (const m of md.replace(/```[\s\S]*?```/g, '').matchAll(/`(?:npx )?capenter\s+([^`]+)`/g))
    out.push((m[1] ?? '').replace(/\s+/g, ' ').trim());
  return out;
}

/** Why `args` is not a valid invocation of `program` (unknown command or flag), or undefined. */
function checkCommand(program: Command, args: string): string | undefined {
  const words = args.split(/\s+/).filter((w) => w && !w.startsWith('>') && !w.startsWith('|'));
  let cmd = program;
  while (words[0] && !words[0].startsWith('-')) {
    const sub = cmd.commands.find((c) => c.name() === words[0]);
    if (!sub) {
      if (cmd === program) return `unknown command "${words[0]}"`;
      break;
    }
    cmd = sub;
    words.shift();
  }
  for (const w of words.filter((x) => x.startsWith('-'))) {
    const flag = w.split('=')[0] ?? w;
    if (flag === '--help' || flag === '-h') continue;
    if (!cmd.options.some((o) => o.long === flag || o.short === flag)) return `unknown flag ${flag}`;
  }
  return undefined;
}
