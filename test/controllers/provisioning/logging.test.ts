/**
 * The controller's JSON log lines in upstream Karpenter's zap shape (kubernetes-sigs/karpenter
 * `pkg/operator/logging/logging.go`; `provisioner.go` "created nodeclaim"; `nodeclaim/lifecycle/launch.go`
 * "launched nodeclaim"): real lines emitted by the provisioner and the NodeClaim lifecycle controller against the
 * embedded API server, parsed and compared key by key.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/apis/core.ts';
import { NodeClaimLifecycleController } from '../../../src/controllers/nodeclaim/lifecycle/controller.ts';
import { pendingPod, testNodePool } from '../../../src/controllers/provisioning/testing.ts';
import { SharedInformers } from '../../../src/kube/informer.ts';
import { createLogger } from '../../../src/kube/logger.ts';
import { createNodePool, createPendingPod, type Env, eventually, startEnv } from './harness.ts';

/** controller-runtime's `reconcileID`: a random (v4) UUID. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let env: Env | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

async function podsSeen(cluster: { pendingPods(): Pod[] }, n: number): Promise<void> {
  await eventually(() => cluster.pendingPods().length === n, `${n} pending pods in state`);
}

describe('controller log lines (upstream keys)', () => {
  it('"found provisionable pod(s)", "created nodeclaim", "launched nodeclaim" and "registered nodeclaim" carry upstream keys and values', async () => {
    env = await startEnv();
    const { client, clock } = env;
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({
      level: 'info',
      commit: 'abc1234',
      now: () => clock.now(),
      destination: { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) },
    });
    await createNodePool(
      client,
      testNodePool('default', {
        requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] }],
      }),
    );
    await createPendingPod(client, pendingPod('web', { cpu: '1', memory: '1Gi' }));
    const p = await env.startProcess({}, logger);
    await podsSeen(p.cluster, 1);
    const res = await p.provisioner.provision();
    const name = res.created[0]?.nodeClaim.metadata.name ?? '';
    expect(name).toMatch(/^default-[a-z0-9]{5}$/);
    const time = new Date(clock.now()).toISOString();
    expect(time).toBe('2025-01-01T00:00:00.000Z');

    const found = lines.find((l) => l.message === 'found provisionable pod(s)');
    expect(found).toEqual({
      level: 'INFO',
      time,
      logger: 'controller',
      commit: 'abc1234',
      controller: 'provisioner',
      namespace: '',
      name: '',
      Pods: 'default/web',
      nodeclaims: 1,
      duration: expect.stringMatching(/^\d+ms$/),
      message: 'found provisionable pod(s)',
    });
    const created = lines.find((l) => l.message === 'created nodeclaim');
    expect(created).toEqual({
      level: 'INFO',
      time,
      logger: 'controller',
      commit: 'abc1234',
      controller: 'provisioner',
      namespace: '',
      name: '',
      NodePool: { name: 'default' },
      NodeClaim: { name },
      requests: { cpu: '1', memory: '1024Mi', pods: '1' },
      'instance-types': 'm5.large',
      message: 'created nodeclaim',
    });

    const lifecycle = new NodeClaimLifecycleController({
      client,
      cloudProvider: p.provider,
      clock,
      logger,
      recorder: p.recorder,
      registry: p.registry,
      informers: new SharedInformers(client, { clock }),
    });
    const ac = new AbortController();
    const running = lifecycle.start(ac.signal);
    await eventually(
      () => lines.some((l) => l.message === 'registered nodeclaim'),
      'registered nodeclaim logged',
    );
    ac.abort();
    await running;
    const launched = lines.find((l) => l.message === 'launched nodeclaim');
    expect(launched).toEqual({
      level: 'INFO',
      time,
      logger: 'controller',
      commit: 'abc1234',
      controller: 'nodeclaim.lifecycle',
      controllerGroup: 'karpenter.sh',
      controllerKind: 'NodeClaim',
      NodeClaim: { name },
      namespace: '',
      name,
      reconcileID: expect.stringMatching(UUID),
      'provider-id': 'kwok://us-east-1/us-east-1a/i-00000000000000001',
      'instance-type': 'm5.large',
      zone: 'us-east-1a',
      'capacity-type': 'spot',
      allocatable: {
        cpu: '1930m',
        'ephemeral-storage': '17Gi',
        memory: '6903Mi',
        pods: '29',
        'vpc.amazonaws.com/pod-eni': '9',
      },
      message: 'launched nodeclaim',
    });
    // the kwok provider wrote the Node at launch: a later reconcile registers it (Node and provider-id now on the
    // reconcile logger, as upstream's `Reconcile` adds them from the status)
    expect(lines.find((l) => l.message === 'registered nodeclaim')).toEqual({
      level: 'INFO',
      time,
      logger: 'controller',
      commit: 'abc1234',
      controller: 'nodeclaim.lifecycle',
      controllerGroup: 'karpenter.sh',
      controllerKind: 'NodeClaim',
      NodeClaim: { name },
      namespace: '',
      name,
      reconcileID: expect.stringMatching(UUID),
      'provider-id': 'kwok://us-east-1/us-east-1a/i-00000000000000001',
      Node: { name },
      message: 'registered nodeclaim',
    });
    // the whole stream: nothing but upstream's level spellings, no pino `pid`/`hostname`/`msg`
    expect(new Set(lines.map((l) => l.level))).toEqual(new Set(['INFO']));
    expect(lines.filter((l) => 'msg' in l || 'pid' in l || 'hostname' in l)).toEqual([]);
  });
});
