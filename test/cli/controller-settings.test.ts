/**
 * `capenter controller` with upstream Karpenter v1.14.1's settings (issue 26): upstream's default FEATURE_GATES
 * string and upstream-only settings load (warnings printed before anything starts), refused values and misspelled
 * names exit 2 naming the setting and the closest known name, before the controller connects to anything.
 */
import { describe, expect, it, vi } from 'vitest';
import { CONTROLLER_SETTINGS, runController } from '../../src/cli/controller.ts';
import { buildProgram } from '../../src/cli/program.ts';
import { closestName, editDistance } from '../../src/config/settings.ts';
import { UPSTREAM_FEATURE_GATES } from '../../src/operator/options.ts';
import { UPSTREAM_SETTINGS } from '../../src/parity/table.ts';

/** Runs the controller with `flags` and `env`; a missing kubeconfig stops it right after the settings. */
async function run(
  env: Record<string, string>,
  flags: Record<string, unknown> = {},
): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const code = await runController(
    { kubeconfig: '/nonexistent/capenter-kubeconfig', ...flags },
    { env, stderr: (t) => (stderr += t) },
  );
  return { code, stderr };
}

const UPSTREAM_DEFAULT_GATES =
  'NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false';

describe('capenter controller: upstream settings (issue 26)', () => {
  it("upstream's default FEATURE_GATES and chart environment pass the settings (exit 1 only for the missing kubeconfig)", async () => {
    const { code, stderr } = await run({
      FEATURE_GATES: UPSTREAM_DEFAULT_GATES,
      KARPENTER_SERVICE: 'karpenter',
      KUBERNETES_MIN_VERSION: '1.19.0-0',
      SYSTEM_NAMESPACE: 'kube-system',
      CPU_REQUESTS: '1000',
      MEMORY_LIMIT: '1073741824',
      LOG_LEVEL: 'info',
    });
    const lines = stderr.split('\n');
    // ReservedCapacity=true is implemented (issue 28): no warning for the gates
    expect(lines.slice(0, 2)).toEqual([
      'warning: KARPENTER_SERVICE=karpenter: has no effect in capenter (capenter serves no webhooks)',
      'warning: MEMORY_LIMIT=1073741824: has no effect in capenter (a Go runtime setting; size the Node.js heap with NODE_OPTIONS)',
    ]);
    expect(lines[2]).toMatch(/^error: .*capenter-kubeconfig/);
    expect(code).toBe(1);
  });

  it('a gate capenter does not implement set to true exits 2 naming it', async () => {
    const { code, stderr } = await run({ FEATURE_GATES: `${UPSTREAM_DEFAULT_GATES},CapacityBuffer=true` });
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /^error: FEATURE_GATES: ".*CapacityBuffer=true" is not valid \(feature gate CapacityBuffer is not implemented in capenter; set CapacityBuffer=false or leave it out\);/,
    );
  });

  it('a misspelled environment variable exits 2 with the closest setting; unrelated variables pass', async () => {
    expect(await run({ BATCH_IDLE_DURATON: '1s', PATH: '/usr/bin' })).toEqual({
      code: 2,
      stderr:
        'error: unknown setting BATCH_IDLE_DURATON (environment variable); did you mean BATCH_IDLE_DURATION?\n',
    });
    expect((await run({ log_level: 'debug' })).stderr).toBe(
      'error: unknown setting log_level (environment variable); did you mean LOG_LEVEL?\n',
    );
    expect((await run({ EKS_CONTROL_PLAN: 'false' })).stderr).toBe(
      'error: unknown setting EKS_CONTROL_PLAN (environment variable); did you mean EKS_CONTROL_PLANE?\n',
    );
    const ok = await run({ KUBERNETES_SERVICE_HOST: '10.0.0.1', HOSTNAME: 'x', NODE_OPTIONS: '' });
    expect(ok.code).toBe(1);
  });

  it('aws: EKS_CONTROL_PLANE=false without CLUSTER_ENDPOINT, ENABLE_ZONAL_SHIFT=true and an AMI_REFRESH_INTERVAL under 1m exit 2', async () => {
    const aws = { cloudProvider: 'aws' };
    expect(await run({ CLUSTER_NAME: 'c1', EKS_CONTROL_PLANE: 'false' }, aws)).toEqual({
      code: 2,
      stderr:
        'error: CLUSTER_ENDPOINT: "" is not valid (required with EKS_CONTROL_PLANE=false, which never asks EKS DescribeCluster); CLUSTER_ENDPOINT accepts an http(s) URL, e.g. https://ABCD.gr7.us-west-2.eks.amazonaws.com\n',
    });
    expect((await run({ CLUSTER_NAME: 'c1', ENABLE_ZONAL_SHIFT: 'true' }, aws)).stderr).toBe(
      'error: ENABLE_ZONAL_SHIFT: "true" is not valid (not implemented in capenter (zonal shift is not supported)); ENABLE_ZONAL_SHIFT accepts false (true is refused: not implemented)\n',
    );
    expect((await run({ CLUSTER_NAME: 'c1', AMI_REFRESH_INTERVAL: '30s' }, aws)).stderr).toBe(
      'error: AMI_REFRESH_INTERVAL: "30s" is not valid (must be at least 1m); AMI_REFRESH_INTERVAL accepts a duration of at least 1m, e.g. "5m"\n',
    );
    const dryRun = await run(
      { CLUSTER_NAME: 'c1', DISABLE_DRY_RUN: 'true', AMI_REFRESH_INTERVAL: '1m' },
      aws,
    );
    // DISABLE_DRY_RUN is a real setting (issue 28): no warning, the start goes on to the kubeconfig
    expect(dryRun.stderr.split('\n')[0]).toMatch(/^error: .*capenter-kubeconfig/);
    expect((await run({ CLUSTER_NAME: 'c1', DISABLE_DRY_RUN: 'maybe' }, aws)).stderr).toMatch(
      /^error: DISABLE_DRY_RUN: "maybe" is not valid/,
    );
  });

  it('a misspelled flag exits 2 with the closest flag (commander)', async () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation((code) => {
      throw new Error(`exit ${code}`);
    });
    let err = '';
    const program = buildProgram();
    for (const c of [program, ...program.commands])
      c.configureOutput({ writeErr: (t) => (err += t), writeOut: () => {} });
    try {
      await expect(
        program.parseAsync(['controller', '--eks-controlplane', 'false'], { from: 'user' }),
      ).rejects.toThrow('exit 2');
    } finally {
      exit.mockRestore();
    }
    expect(err.split('\n').slice(0, 2)).toEqual([
      "error: unknown option '--eks-controlplane'",
      '(Did you mean --eks-control-plane?)',
    ]);
  });
});

describe("upstream v1.14.1's settings list", () => {
  it('every upstream flag and variable is a setting of capenter controller, under the same names', () => {
    expect(UPSTREAM_SETTINGS).toHaveLength(34);
    const ours = new Map(CONTROLLER_SETTINGS.map((s) => [s.env, s.flag]));
    // the list lives once, in the parity table (src/parity/table.ts, upstream's `options.go` in order)
    const missing = UPSTREAM_SETTINGS.filter(({ env, flag }) => ours.get(env) !== flag);
    expect(missing).toEqual([]);
    expect(Object.keys(UPSTREAM_FEATURE_GATES)).toEqual([
      'NodeRepair',
      'ReservedCapacity',
      'SpotToSpotConsolidation',
      'NodeOverlay',
      'StaticCapacity',
      'CapacityBuffer',
    ]);
  });
});

describe('closest names', () => {
  it('editDistance is Levenshtein; closestName picks the nearest within the limit', () => {
    expect([
      editDistance('kitten', 'sitting'),
      editDistance('', 'abc'),
      editDistance('same', 'same'),
    ]).toEqual([3, 3, 0]);
    expect(closestName('SpotToSpot', ['NodeRepair', 'SpotToSpotConsolidation'])).toBeUndefined();
    expect(closestName('nodrepair', ['NodeRepair', 'NodeOverlay'])).toBe('NodeRepair');
  });
});
