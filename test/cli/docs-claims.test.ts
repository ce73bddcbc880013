/**
 * What the docs say about `start` and `simulate` is what the program does (issue 26 item 7: docs/controller.md
 * said `start` still applies the valid objects of an invalid input; docs/simulate.md said the disruption pass
 * time is the wall clock while `--now` sets it). Each claim is checked against a run of the command.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../scripts/build.ts';
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
});
