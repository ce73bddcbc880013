/** E2E: `capenter start --exit-when-settled -o json` on the bundled example, and `capenter controller` flag errors. */
import { describe, expect, it } from 'vitest';
import { controllerOptions, runController } from '../../src/cli/controller.ts';
import { runStart, type StartSummary } from '../../src/cli/start.ts';

describe('capenter start', () => {
  it('provisions the bundled microservices demo and exits 0 once every pod runs', async () => {
    let out = '';
    let err = '';
    const code = await runStart(
      { exitWhenSettled: true, output: 'json', timeout: '60' },
      { stdout: (t) => (out += t), stderr: (t) => (err += t), progressIntervalMs: 250 },
    );
    expect(code, err).toBe(0);
    const s = JSON.parse(out) as StartSummary;
    expect(s.settled).toBe(true);
    // same decision as `capenter simulate -f examples/microservices-demo` (see examples/README.md)
    expect(s.nodeClaims.map((n) => [n.nodePool, n.instanceType, n.capacityType])).toEqual([
      ['general-purpose', 'c6a.large', 'on-demand'],
    ]);
    expect(s.totals.pricePerHour).toBeCloseTo(0.0765, 4);
    expect(s.pods.running).toBe(s.pods.total);
    expect(s.nodeClaims[0]!.pods).toBe(s.pods.total);
    expect(err).toMatch(/kubeconfig \S+kubeconfig/);
    expect(err).toMatch(/pods \d+\/\d+ running .* nodeclaims 1 /);
  }, 60_000);

  it('rejects bad flags with exit code 2', async () => {
    let err = '';
    const io = { stdout: () => {}, stderr: (t: string) => (err += t) };
    expect(await runStart({ output: 'yaml' }, io)).toBe(2);
    expect(await runStart({ region: 'mars-1' }, io)).toBe(2);
    expect(await runStart({ timeout: '-1' }, io)).toBe(2);
    expect(err).toMatch(/--output must be "table" or "json"/);
    expect(err).toMatch(/--region "mars-1" has no embedded catalog/);
  });
});

describe('capenter controller', () => {
  it('flags win over environment variables', () => {
    const o = controllerOptions(
      { metricsPort: '0', region: 'us-west-2', disableLeaderElection: true },
      { METRICS_PORT: '9000', AWS_REGION: 'eu-west-1' },
    );
    expect([o.metricsPort, o.region, o.leaderElect]).toEqual([0, 'us-west-2', false]);
  });

  it('exits 2 on invalid options', async () => {
    let err = '';
    expect(await runController({ metricsPort: 'x' }, { stderr: (t) => (err += t), env: {} })).toBe(2);
    expect(err).toMatch(
      /--metrics-port: "x" is not valid \(not a port\); METRICS_PORT accepts a port number/,
    );
  });
});
