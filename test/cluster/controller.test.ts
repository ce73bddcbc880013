/**
 * `npm run test:cluster`, against the real control plane of the global setup (kube-apiserver,
 * kube-controller-manager, kube-scheduler v1.34.4, kwok): capenter's CRDs through kubectl v1.34.4, then
 * `capenter controller` (a real process, through the CLI) against the cluster without them and with
 * `--install-crds`, then the end-to-end scale 0 → 50 → 5 (scenario.ts) with the real kube-scheduler placing
 * the pods and kwok making the nodes Ready. The same scenario then runs on the embedded control plane
 * (API server + scheduler/kubelet/workload stand-ins) for the time comparison.
 * The tests run in order: each leaves the cluster as the next expects it.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crdObjects } from '../../src/apis/crds.ts';
import { startSimulatedCluster } from '../../src/embedded/cluster.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { isNotFound } from '../../src/kube/errors.ts';
import { checkCRDs, requiredCRDs } from '../../src/operator/crds.ts';
import {
  type ControllerProcess,
  clusterDisposable,
  clusterKubeconfig,
  kubectl,
  root,
  startController,
  until,
} from './helpers.ts';
import { type ScenarioFigures, scaleScenario } from './scenario.ts';

const CRD_NAMES = Object.values(crdObjects()).map((c) => c.metadata.name);
const REQUIRED = requiredCRDs([
  { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass' },
  { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass' },
]);

let kubeconfig: string;
let client: KubeClient;
let controller: ControllerProcess | undefined;
const figures: Record<string, ScenarioFigures> = {};

async function noCapenterCRDs(): Promise<void> {
  for (const name of CRD_NAMES)
    await client.delete('CustomResourceDefinition', name).catch((e: unknown) => {
      if (!isNotFound(e)) throw e;
    });
  await until(
    async () => (await checkCRDs(client, REQUIRED)).missing.length === REQUIRED.length,
    'capenter CRDs gone',
  );
}

beforeAll(async () => {
  kubeconfig = clusterKubeconfig();
  if (!clusterDisposable())
    throw new Error('test/cluster deletes and installs CRDs: point it only at a disposable cluster');
  client = KubeClient.fromKubeconfig(kubeconfig);
  await noCapenterCRDs();
});

afterAll(async () => {
  await controller?.stop();
  client?.close();
  if (Object.keys(figures).length > 0) console.log(`e2e figures: ${JSON.stringify(figures)}`);
});

describe('capenter CRDs with kubectl v1.34.4', () => {
  it('kubectl apply -f crds/: every CRD Established, served, explained; kubectl delete removes them', async () => {
    if (process.env.CAPENTER_TEST_KUBECTL) {
      const v = await kubectl(kubeconfig, ['version', '--client', '-o', 'json']);
      expect(JSON.parse(v.stdout).clientVersion.gitVersion).toBe('v1.34.4');
    }
    const files = readdirSync(join(root, 'crds')).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBe(CRD_NAMES.length);
    const applied = await kubectl(kubeconfig, ['apply', '-f', 'crds/']);
    expect(applied.stderr).toBe('');
    expect(applied.stdout.trim().split('\n').sort()).toEqual(
      [...CRD_NAMES].sort().map((n) => `customresourcedefinition.apiextensions.k8s.io/${n} created`),
    );
    const waited = await kubectl(kubeconfig, [
      'wait',
      '--for=condition=Established',
      '--timeout=120s',
      ...CRD_NAMES.map((n) => `crd/${n}`),
    ]);
    expect(waited.code, waited.stderr).toBe(0);
    for (const name of CRD_NAMES) {
      const crd = await client.get('CustomResourceDefinition', name);
      const conds = Object.fromEntries(
        ((crd.status?.conditions ?? []) as Array<{ type: string; status: string }>).map((c) => [
          c.type,
          c.status,
        ]),
      );
      expect({ name, ...conds }).toMatchObject({ name, Established: 'True', NamesAccepted: 'True' });
    }
    // served: an empty list, short names and categories resolve, the published schema explains fields
    const get = await until(async () => {
      const r = await kubectl(kubeconfig, ['get', 'nodepools,nodeclaims,ec2nc,kwoknodeclasses']);
      return r.code === 0 ? r : undefined;
    }, 'kubectl get of the new kinds');
    expect(get.stderr).toMatch(/No resources found/);
    // (the OpenAPI v3 document of a new CRD is published a moment after it is Established)
    const explain = await until(async () => {
      const r = await kubectl(kubeconfig, ['explain', 'nodepool.spec.disruption.consolidateAfter']);
      return r.code === 0 ? r : undefined;
    }, 'kubectl explain of the NodePool schema');
    expect(explain.stdout).toMatch(/FIELD: *consolidateAfter/);
    // an invalid NodePool is rejected by the CRD's own schema on a real server
    const bad = await kubectl(
      kubeconfig,
      ['apply', '-f', '-'],
      'apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: bad}\nspec:\n  template:\n    spec:\n' +
        '      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: x}\n' +
        '      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]\n' +
        '  disruption: {consolidationPolicy: Sometimes}\n',
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/Unsupported value: "Sometimes"/);
    const del = await kubectl(kubeconfig, ['delete', '-f', 'crds/', '--wait=true']);
    expect(del.code, del.stderr).toBe(0);
    await until(
      async () => (await checkCRDs(client, REQUIRED)).missing.length === REQUIRED.length,
      'CRDs gone after kubectl delete',
    );
  });
});

describe('capenter controller against the real control plane', () => {
  it('without the CRDs: one error naming them and the fix, /readyz says which are missing', async () => {
    await noCapenterCRDs();
    const c = await startController(kubeconfig);
    try {
      const err = await until(() => c.logs.find((l) => l.level === 'ERROR'), 'the missing-CRD error', 60_000);
      expect(err.missing).toEqual(REQUIRED.map((r) => r.name));
      expect(err.fix).toBe('kubectl apply -f crds/');
      expect(err.message).toBe(
        'CustomResourceDefinitions not installed: nodepools.karpenter.sh, nodeclaims.karpenter.sh, ' +
          'kwoknodeclasses.karpenter.kwok.sh, ec2nodeclasses.karpenter.k8s.aws; install with ' +
          '`kubectl apply -f crds/` (or run `capenter controller --install-crds`)',
      );
      const r = await c.readyz();
      expect(r.status).toBe(503);
      expect(r.body).toBe(`not ready: ${err.message}\n`);
      // two more checks (every 5 s) later: still the one error, nothing started, nothing else failing
      const checks = Date.now() + 11_000;
      await until(() => Date.now() > checks, 'two more CRD checks', 30_000, 500);
      expect(c.logs.filter((l) => l.level === 'ERROR' || l.level === 'WARN')).toEqual([err]);
      expect(c.logs.some((l) => l.message === 'starting controllers')).toBe(false);
      expect((await c.readyz()).status).toBe(503);
    } finally {
      expect(await c.stop()).toBe(0);
    }
  });

  it('--install-crds applies crds/: every CRD Established, the controller ready without an error', async () => {
    controller = await startController(kubeconfig, ['--install-crds']);
    await until(async () => (await controller?.readyz())?.status === 200, '/readyz 200', 120_000, 250);
    expect(controller.logs.filter((l) => l.level === 'ERROR')).toEqual([]);
    expect(controller.logs.map((l) => l.message)).toContain(
      'applied CustomResourceDefinitions (--install-crds)',
    );
    expect(controller.logs.map((l) => l.message)).toContain('starting controllers');
    const st = await kubectl(kubeconfig, [
      'get',
      'crd',
      ...CRD_NAMES,
      '-o',
      'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Established")].status}{"\\n"}{end}',
    ]);
    expect(st.code, st.stderr).toBe(0);
    expect(st.stdout.trim().split('\n').sort()).toEqual([...CRD_NAMES].sort().map((n) => `${n}=True`));
    // kubectl apply of the same files over the controller's server-side apply: no change needed
    const again = await kubectl(kubeconfig, ['apply', '--server-side', '--force-conflicts', '-f', 'crds/']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/nodepools\.karpenter\.sh serverside-applied/);
  });

  it('scale 0 → 50 → 5: real kube-scheduler and kwok run the pods, NodeClaims launched then consolidated, PDB kept', async () => {
    try {
      const f = await scaleScenario(kubeconfig, 'e2e-real');
      figures.real = f;
      expect(f.nodeClaimsAt50).toBeGreaterThanOrEqual(4); // ceil(50 / 15 pods per m5.4xlarge)
      expect(f.minHealthyDuringConsolidation).toBeGreaterThanOrEqual(4); // the PDB's minAvailable
      const errors = controller?.logs.filter((l) => l.level === 'ERROR') ?? [];
      expect(errors).toEqual([]);
    } finally {
      expect(await controller?.stop()).toBe(0);
      controller = undefined;
    }
  });
});

describe('the same scenario on the embedded control plane', () => {
  it('scale 0 → 50 → 5 with the scheduler, kubelet and workload stand-ins', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'capenter-embedded-'));
    const kc = join(dir, 'kubeconfig');
    await controller?.stop(); // the real cluster's, when an earlier test failed before stopping it
    const sim = await startSimulatedCluster({ kubeconfigPath: kc });
    try {
      controller = await startController(kc);
      await until(async () => (await controller?.readyz())?.status === 200, '/readyz 200', 120_000, 250);
      const f = await scaleScenario(kc, 'e2e-embedded');
      figures.embedded = f;
      expect(f.nodeClaimsAt50).toBeGreaterThanOrEqual(4);
      expect(f.minHealthyDuringConsolidation).toBeGreaterThanOrEqual(4);
    } finally {
      expect(await controller?.stop()).toBe(0);
      controller = undefined;
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
