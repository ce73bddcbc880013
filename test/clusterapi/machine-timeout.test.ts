/**
 * The clusterapi provider's only failure signal against an infrastructure provider on the v1beta2 contract (issue 29):
 * a Machine that never gets a provider ID and reports no `failureReason` (CAPI v1.14 never sets phase `Failed`). The
 * MachineDeployment stand-in models it with a provision time longer than the test; the machine timeout
 * (`--cluster-api-machine-timeout`) and the launch timeout are shortened. What docs/clusterapi.md ("Failed Machines")
 * promises is asserted: the NodeClaim turns `Launched=False` `MachineNotReady` naming the deployment, the replica
 * increment and the bound Machine stay while the launch is retried (no second Machine), the launch timeout deletes the
 * NodeClaim (finalized without a provider delete: it has no provider ID), the provider releases its Machine, and the
 * new NodeClaim for the still-pending pod takes that Machine: the replicas never exceed 1. The timed-out deployment
 * is not marked unavailable (a slow provider is not an ICE). On main the Machine stayed bound to the deleted
 * NodeClaim and each retry added a Machine.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { MachineDeployment } from '../../src/apis/capi.ts';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import { observe } from '../../src/testing/watch.ts';
import { deploymentYaml, eventually, parseYaml } from '../e2e/harness.ts';
import { type ClusterAPIE2E, startClusterAPIE2E } from './harness.ts';

let t: ClusterAPIE2E | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

const launched = (nc: NodeClaim) => nc.status?.conditions?.find((c) => c.type === 'Launched');

describe('clusterapi: a Machine that never gets a provider ID (v1beta2 infrastructure, no failure signal)', () => {
  it('MachineNotReady after the machine timeout, the increment kept while retried, the launch timeout replaces the NodeClaim, the next one takes its Machine', async () => {
    t = await startClusterAPIE2E({
      standIn: { periodSeconds: 0.1, provisionSeconds: 3600 },
      provider: { pollSeconds: 0.1, cacheSeconds: 0.5, machineTimeoutSeconds: 2 },
      tuning: { launchTimeoutSeconds: 6, disruption: { pollSeconds: 1, validationSeconds: 1 } },
    });
    await t.setup([{ name: 'md-a', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', maxSize: 5 }]);
    const replicas = await observe(
      t.stack.env.mgmt,
      'MachineDeployment',
      (mds) => (mds as MachineDeployment[]).find((m) => m.metadata.name === 'md-a')?.spec.replicas ?? 0,
      { namespace: 'default' },
    );
    const wl = t.stack.env.workload.client;
    await wl.create(parseYaml(deploymentYaml('app', 1, '1', '1Gi'))[0]!);
    const first = await eventually(async () => {
      const ncs = await t!.nodeClaims();
      return ncs.length === 1 && launched(ncs[0]!)?.reason === 'MachineNotReady' ? ncs[0] : undefined;
    }, 'Launched=False MachineNotReady');
    const name = first.metadata.name as string;
    expect(launched(first)?.status).toBe('False');
    expect(launched(first)?.message).toBe(
      `no Machine of MachineDeployment default/md-a with a provider ID was bound to NodeClaim "${name}" in time`,
    );
    // while the launch is retried: one Machine, bound to the NodeClaim, no provider ID; the increment stays
    const bound = await t.machines('md-a');
    expect(
      bound.map((m) => [m.metadata.labels?.['karpenter.cluster.x-k8s.io/nodeclaim'], m.spec.providerID]),
    ).toEqual([[name, undefined]]);
    expect((await t.deployment('md-a')).spec.replicas).toBe(1);

    // the launch timeout deletes the NodeClaim (never launched: finalized without a provider delete); the provider
    // releases its Machine and the new NodeClaim for the still-pending pod takes it: no second Machine, no runaway
    const second = await eventually(
      async () => {
        const ncs = await t!.nodeClaims();
        return ncs.length === 1 && ncs[0]!.metadata.name !== name ? ncs[0] : undefined;
      },
      'a new NodeClaim after the launch timeout',
      60_000,
    );
    const taken = await eventually(async () => {
      const ms = await t!.machines('md-a');
      return ms.length === 1 &&
        ms[0]!.metadata.labels?.['karpenter.cluster.x-k8s.io/nodeclaim'] === second.metadata.name
        ? ms[0]
        : undefined;
    }, 'the timed-out Machine bound to the new NodeClaim');
    expect(taken.metadata.uid).toBe(bound[0]!.metadata.uid);
    expect((await t.deployment('md-a')).spec.replicas).toBe(1);
    expect(Math.max(...(await replicas.stop()))).toBe(1);
  }, 120_000);
});
