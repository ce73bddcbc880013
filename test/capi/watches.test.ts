/**
 * The KarpenterMachinePool controller's watches (built with the controller kit): which pool key each management
 * event enqueues — a MachinePool its own KMP, a bootstrap Secret the KMP of the MachinePool that names it, a
 * Cluster every KMP of its namespace — and a workload cluster's Node event the pool it belongs to. The reconcile
 * is replaced by a recorder, so only the mapping is under test.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Node } from '../../src/apis/core.ts';
import {
  KarpenterMachinePoolController,
  type KMPControllerDeps,
} from '../../src/controllers/capi/controller.ts';
import type { ReconcileResult } from '../../src/controllers/runtime/index.ts';
import { EventRecorder } from '../../src/kube/events.ts';
import { silentLogger } from '../../src/kube/logger.ts';
import { eventually } from '../../src/testing/eventually.ts';
import { type StepEnv, samplePool, startStepEnv } from './steps/harness.ts';

/** The controller with its reconcile recording the keys instead of running the steps. */
class RecordingController extends KarpenterMachinePoolController {
  readonly keys: string[] = [];
  override async reconcile(key: string): Promise<ReconcileResult> {
    this.keys.push(key);
    return {};
  }
}

let s: StepEnv | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

describe('KarpenterMachinePool watches', () => {
  it('map MachinePool, bootstrap Secret, Cluster and workload Node events to the pool keys', async () => {
    s = await startStepEnv();
    const { env } = s;
    await s.apply([...samplePool('alpha'), ...samplePool('beta')]);
    const deps: KMPControllerDeps = {
      client: env.mgmt,
      informers: env.mgmtInformers,
      clock: env.clock,
      logger: silentLogger(),
      recorder: new EventRecorder(env.mgmt, { clock: env.clock, component: 'capenter-capi', host: 'test' }),
      bootstrapStore: s.store,
      instances: s.instances,
    };
    const kmp = new RecordingController(deps);
    const ac = new AbortController();
    const running = kmp.start(ac.signal);
    try {
      // the informers' initial objects are events too: both pools get a first reconcile
      await eventually(
        () =>
          env.mgmtInformers.unsynced().length === 0 &&
          kmp.keys.includes('default/alpha') &&
          kmp.keys.includes('default/beta'),
        'informers synced and the initial reconciles run',
      );
      const expectKeys = async (change: () => Promise<unknown>, want: string[]): Promise<void> => {
        kmp.keys.length = 0;
        await change();
        await eventually(() => want.every((k) => kmp.keys.includes(k)), `reconciles of ${want}`);
        expect([...new Set(kmp.keys)].sort()).toEqual(want);
      };
      const annotate = (kind: string, name: string) => () =>
        env.mgmt.patch(
          kind,
          name,
          'default',
          { metadata: { annotations: { touched: 'yes' } } },
          { type: 'merge' },
        );
      await expectKeys(annotate('MachinePool', 'beta'), ['default/beta']);
      await expectKeys(annotate('Secret', 'alpha-bootstrap'), ['default/alpha']);
      await expectKeys(annotate('Cluster', 'alpha-c'), ['default/alpha', 'default/beta']);
      // a workload cluster the controller connected: its Node events requeue the Node's pool
      await kmp.workloads.get('default', 'demo');
      const node: Node = {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: 'n-1', labels: { 'karpenter.sh/nodepool': 'beta' } },
      };
      await expectKeys(() => env.workload.client.create(node), ['default/beta']);
    } finally {
      ac.abort();
      await running;
    }
  }, 60_000);
});
