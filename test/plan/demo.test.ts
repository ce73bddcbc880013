/**
 * The README's `capenter plan` example, as written: `capenter start` runs the bundled demo and keeps serving, the
 * demo's NodePool restricted to instance category `m` (the README's `sed`) is planned against it.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../scripts/build.ts';
import { runPlan } from '../../src/cli/plan.ts';
import { runStart } from '../../src/cli/start.ts';

describe('capenter plan on the bundled demo (README)', () => {
  it('restricting the NodePool to m types drifts the c6a.large node; one m5a.large replaces it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'capenter-plan-demo-'));
    const kubeconfig = join(dir, 'kubeconfig');
    const np = join(dir, 'np.yaml');
    const demo = readFileSync(join(ROOT, 'examples/microservices-demo/general-purpose.yaml'), 'utf8');
    expect(demo).toContain('"c", "m", "r"');
    writeFileSync(np, demo.replace('"c", "m", "r"', '"m"'));
    const abort = new AbortController();
    let err = '';
    let onSettled: () => void = () => {};
    const settled = new Promise<void>((r) => {
      onSettled = r;
    });
    const started = runStart(
      { kubeconfigOut: kubeconfig },
      {
        stdout: (t) => {
          if (t.includes('Settled after')) onSettled();
        },
        stderr: (t) => {
          err += t;
        },
        signal: abort.signal,
        progressIntervalMs: 250,
      },
    );
    try {
      await Promise.race([settled, started.then(() => Promise.reject(new Error(`start ended: ${err}`)))]);
      let out = '';
      let stderr = '';
      const code = await runPlan(
        { kubeconfig, filename: [np], output: 'json', now: '2026-12-03T05:00:00Z' },
        { stdout: (t) => (out += t), stderr: (t) => (stderr += t), env: {} },
      );
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const j = JSON.parse(out);
      expect(j.changes.map((c: { kind: string; result: string }) => [c.kind, c.result])).toEqual([
        ['NodePool', 'configured'],
        ['EC2NodeClass', 'unchanged'],
      ]);
      expect(
        j.nodes.map((n: { instanceType: string; reason: string; wave: number; pods: number }) => [
          n.instanceType,
          n.reason,
          n.wave,
          n.pods,
        ]),
      ).toEqual([['c6a.large', 'RequirementsDrifted', 1, 12]]);
      expect(
        j.replacements.map((r: { instanceType: string; priceUSDPerHour: number; pods: string[] }) => [
          r.instanceType,
          r.priceUSDPerHour,
          r.pods.length,
        ]),
      ).toEqual([['m5a.large', 0.086, 12]]);
      expect(j.unschedulable).toEqual([]);
      expect(j.cost).toEqual({ beforeUSDPerHour: 0.0765, afterUSDPerHour: 0.086, deltaUSDPerHour: 0.0095 });
    } finally {
      abort.abort();
      await started;
    }
  }, 240_000);
});
