/**
 * `capenter controller --cloud-provider clusterapi --cluster-api-kubeconfig MANAGEMENT`: the deployed shape of the
 * clusterapi provider, against the two embedded clusters with the MachineDeployment stand-in; and its settings'
 * errors.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import { runController } from '../../src/cli/controller.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import { type CAPIEnvironment, startCAPIEnvironment } from '../../src/embedded/cluster.ts';
import { machineDeploymentNodeShape } from '../../src/embedded/rules.ts';
import {
  sampleClusterAPIObjects,
  sampleClusterAPIWorkloadObjects,
  writeStatuses,
} from '../../src/sim/capi/clusterapi.ts';
import { CAPIMachineDeploymentStandIn } from '../../src/sim/capi/machinedeployment.ts';
import { allRunning, deploymentYaml, eventually, parseYaml } from '../e2e/harness.ts';

let env: CAPIEnvironment | undefined;
let standIn: CAPIMachineDeploymentStandIn | undefined;
afterAll(async () => {
  await standIn?.stop();
  await env?.stop();
});

describe('capenter controller --cloud-provider clusterapi', () => {
  it('rejects a bad setting naming it and what it accepts', async () => {
    let err = '';
    const code = await runController(
      {
        cloudProvider: 'clusterapi',
        clusterApiMachineTimeout: 'soon',
        metricsPort: '0',
        healthProbePort: '0',
      },
      { stderr: (t) => (err += t), env: {} },
    );
    expect(code).toBe(2);
    expect(err).toContain('--cluster-api-machine-timeout: "soon" is not valid');
    expect(err).toContain('CLUSTER_API_MACHINE_TIMEOUT accepts a positive duration');
  });

  it('launches Machines of the management cluster for pending pods of the workload cluster', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'capenter-clusterapi-ctl-'));
    env = await startCAPIEnvironment({
      workload: {
        kubeconfigPath: join(dir, 'workload'),
        kubeletReadyDelaySeconds: 0,
        podStartDelaySeconds: 0.2,
      },
      managementKubeconfigPath: join(dir, 'management'),
      machinePoolStandIn: false,
    });
    const wl = env.workload.client;
    standIn = new CAPIMachineDeploymentStandIn({
      nodeShape: machineDeploymentNodeShape,
      client: env.mgmt,
      clock: env.clock,
      workload: async () => wl,
      periodSeconds: 0.1,
    });
    standIn.start();
    const ac = new AbortController();
    let err = '';
    const run = runController(
      {
        kubeconfig: join(dir, 'workload'),
        cloudProvider: 'clusterapi',
        leaderElect: false,
        metricsPort: '0',
        healthProbePort: '0',
        logLevel: 'error',
      },
      {
        stderr: (t) => (err += t),
        env: { CLUSTER_API_KUBECONFIG: join(dir, 'management'), CLUSTER_API_NAMESPACE: 'default' },
        signal: ac.signal,
      },
    );
    try {
      const mgmtObjs = sampleClusterAPIObjects();
      await applyObjects(env.mgmt, mgmtObjs);
      await writeStatuses(env.mgmt, mgmtObjs);
      await applyObjects(wl, sampleClusterAPIWorkloadObjects());
      await wl.create(parseYaml(deploymentYaml('app', 3, '1', '1Gi'))[0]!);
      await eventually(() => allRunning(wl, 3), 'pods running', 60_000);
      const claims = (await wl.list('NodeClaim')).items as NodeClaim[];
      expect(claims.length).toBe(1);
      // 3 one-vCPU pods: the cheaper m5.xlarge deployment (0.192 USD/h) over c5.2xlarge (0.34).
      expect(claims[0]!.metadata.annotations?.['karpenter.cluster.x-k8s.io/machinedeployment']).toBe(
        'default/md-m5-xlarge',
      );
      expect(
        (
          (await env.mgmt.get('MachineDeployment', 'md-m5-xlarge', 'default')) as {
            spec: { replicas: number };
          }
        ).spec.replicas,
      ).toBe(1);
    } finally {
      ac.abort();
      expect(await run, err).toBe(0);
    }
  }, 90_000);
});
