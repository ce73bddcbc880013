/** The dashboard's flags: `capenter controller --dashboard-port` and `capenter start --dashboard-port` reject bad ports. */
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { dashboardPort, runController } from '../../src/cli/controller.ts';
import { runStart } from '../../src/cli/start.ts';
import { startSimulatedCluster } from '../../src/embedded/cluster.ts';

describe('dashboard flags', () => {
  it('capenter controller: off without the flag, a port with it, exit 2 naming the flag on a bad one', async () => {
    expect(dashboardPort({})).toBeUndefined();
    expect(dashboardPort({ dashboardPort: '8081' })).toBe(8081);
    expect(dashboardPort({ dashboardPort: '0' })).toBe(0);
    expect(() => dashboardPort({ dashboardPort: '70000' })).toThrow(
      '--dashboard-port must be a port number 0–65535 (0: any free one), got "70000"',
    );
    let err = '';
    const code = await runController({ dashboardPort: 'web' }, { stderr: (t) => (err += t), env: {} });
    expect(code).toBe(2);
    expect(err).toBe('error: --dashboard-port must be a port number 0–65535 (0: any free one), got "web"\n');
  });

  it('capenter start: exit 2 before starting anything on a bad --dashboard-port', async () => {
    let err = '';
    const code = await runStart({ dashboardPort: '-1' }, { stdout: () => {}, stderr: (t) => (err += t) });
    expect(code).toBe(2);
    expect(err).toBe('error: --dashboard-port must be a port number (0 = any free port), got "-1"\n');
  });

  it('capenter controller: a dashboard port in use exits 1 naming the address, the controller stopped', async () => {
    const sim = await startSimulatedCluster({ components: { workloads: false } });
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as { port: number }).port;
    try {
      let err = '';
      const code = await runController(
        {
          kubeconfig: sim.kubeconfig,
          disableLeaderElection: true,
          metricsPort: '0',
          healthProbePort: '0',
          logLevel: 'silent',
          dashboardPort: String(port),
        },
        { stderr: (t) => (err += t), env: {} },
      );
      expect(code).toBe(1);
      expect(err).toContain(`error: cannot serve the dashboard on 127.0.0.1:${port}: listen EADDRINUSE`);
    } finally {
      busy.close();
      await sim.stop();
    }
  }, 180_000);

  it('capenter controller: a signal aborted before the operator starts exits 0 (a SIGTERM during start-up is not missed)', async () => {
    const sim = await startSimulatedCluster({ components: { workloads: false } });
    try {
      let err = '';
      const code = await runController(
        {
          kubeconfig: sim.kubeconfig,
          disableLeaderElection: true,
          metricsPort: '0',
          healthProbePort: '0',
          logLevel: 'silent',
        },
        { stderr: (t) => (err += t), env: {}, signal: AbortSignal.abort() },
      );
      expect(code).toBe(0);
      expect(err).toContain('capenter controller: https://127.0.0.1:');
    } finally {
      await sim.stop();
    }
  });
});
