/** The dashboard's flags: `capenter controller --dashboard-port` and `capenter start --dashboard-port` reject bad ports. */
import { describe, expect, it } from 'vitest';
import { dashboardPort, runController } from '../../src/cli/controller.ts';
import { runStart } from '../../src/cli/start.ts';

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
});
