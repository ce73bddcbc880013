/**
 * capenter's `clusterapi` cloud provider against the REAL Cluster API v1.14.2 MachineDeployment, MachineSet and
 * Machine controllers (test/cluster/realcapi.ts starts the core manager with its webhooks) on the control plane of
 * `npm run test:cluster`, one API server being management and workload cluster, `capenter controller
 * --cloud-provider clusterapi` as a real process. The Machines' infrastructure is a minimal provider running in this
 * process (test/cluster/kwokinfra.ts: KwokMachine/KwokMachineTemplate, provider ID, `status.initialization.provisioned`,
 * a kwok Node per Machine). The bootstrap data Secret is named directly in the MachineDeployment
 * (`bootstrap.dataSecretName`, no bootstrap controller); the Cluster's AWSCluster and KubeadmControlPlane get by hand
 * the status their controllers would set (as in test/cluster/realcapi.test.ts). The steps share one deployment and
 * run in order: scale-up (replicas = NodeClaims, Machines bound, Running with nodeRef, NodeClaims Initialized, pods
 * Running), then consolidation deleting exactly the chosen Machine.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ControllerProcess, clusterKubeconfig, kubectl, startController, until } from './helpers.ts';
import { type KwokInfra, kwokInfraCRDs, startKwokInfra } from './kwokinfra.ts';
import { applyDocs, capiClusterObjects, type RealCAPI, startRealCAPI } from './realcapi.ts';

const NS = 'realcapi-md';
const CLUSTER = 'rcmd';
const MD = 'rcmd-workers';
const POOL = 'rcmd-pool';
const OWNED = { 'cluster.x-k8s.io/cluster-name': CLUSTER };

let kc: string;
let capi: RealCAPI | undefined;
let infra: KwokInfra | undefined;
let ctl: ControllerProcess | undefined;

type Obj = {
  metadata: {
    name: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
  };
  spec?: Record<string, unknown> & {
    taints?: Array<{ key: string }>;
    providerID?: string;
    replicas?: number;
  };
  status?: Record<string, unknown> & {
    phase?: string;
    providerID?: string;
    nodeRef?: { name: string };
    conditions?: Array<{ type: string; status: string; reason?: string }>;
  };
};

/** `kubectl <args>`, throwing with its stderr on a non-zero exit. */
async function k(...args: string[]): Promise<string> {
  const r = await kubectl(kc, args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** `kubectl get <kind> [-l selector]` as a list (namespace `ns`, or cluster-scoped with null). */
async function list(kind: string, selector?: string, ns: string | null = NS): Promise<Obj[]> {
  const args = ['get', kind, '-o', 'json', ...(ns ? ['-n', ns] : []), ...(selector ? ['-l', selector] : [])];
  return (JSON.parse(await k(...args)) as { items: Obj[] }).items;
}

/** `kubectl get` of one object as JSON. @throws when absent. */
async function get(kind: string, name: string, ns: string | null = NS): Promise<Obj> {
  return JSON.parse(await k('get', kind, name, '-o', 'json', ...(ns ? ['-n', ns] : []))) as Obj;
}

/** Merge-patches the status subresource of `kind/name`. */
const patchStatus = (kind: string, name: string, status: unknown) =>
  k('patch', kind, name, '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status }));

const cond = (o: Obj, type: string) => (o.status?.conditions ?? []).find((c) => c.type === type);

/** The Cluster with its infrastructure and control plane, the kubeconfig Secret, the bootstrap data Secret. */
function clusterObjects(kubeconfigB64: string, apiPort: string): unknown[] {
  const meta = (name: string) => ({ name, namespace: NS, labels: OWNED });
  return [
    ...capiClusterObjects({ ns: NS, cluster: CLUSTER, kubeconfigB64, apiPort }),
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: meta(`${MD}-bootstrap`),
      type: 'cluster.x-k8s.io/secret',
      stringData: { format: 'cloud-config', value: '#cloud-config\nruncmd:\n  - kubeadm join\n' },
    },
  ];
}

/**
 * The KwokMachineTemplate (2 CPU, 4 GiB) and a member MachineDeployment with cluster-autoscaler's capacity and
 * min/max annotations and a price, created without `spec.replicas` (CAPI's webhook defaults it to min-size 0).
 */
function deploymentObjects(): unknown[] {
  return [
    {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
      kind: 'KwokMachineTemplate',
      metadata: { name: MD, namespace: NS, labels: OWNED },
      spec: { template: { spec: { cpu: '2', memory: '4Gi' } } },
    },
    {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'MachineDeployment',
      metadata: {
        name: MD,
        namespace: NS,
        labels: { ...OWNED, 'node.cluster.x-k8s.io/karpenter-member': '' },
        annotations: {
          'capacity.cluster-autoscaler.kubernetes.io/cpu': '2',
          'capacity.cluster-autoscaler.kubernetes.io/memory': '4Gi',
          'capacity.cluster-autoscaler.kubernetes.io/maxPods': '110',
          'capenter.io/price-per-hour': '0.1',
          'cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size': '0',
          'cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size': '6',
        },
      },
      spec: {
        clusterName: CLUSTER,
        template: {
          spec: {
            clusterName: CLUSTER,
            version: 'v1.33.1',
            bootstrap: { dataSecretName: `${MD}-bootstrap` },
            infrastructureRef: {
              apiGroup: 'infrastructure.cluster.x-k8s.io',
              kind: 'KwokMachineTemplate',
              name: MD,
            },
          },
        },
      },
    },
  ];
}

/** The ClusterAPINodeClass and a tainted NodePool (only this file's pods land on it). */
function workloadObjects(): unknown[] {
  return [
    {
      apiVersion: 'karpenter.cluster.x-k8s.io/v1alpha1',
      kind: 'ClusterAPINodeClass',
      metadata: { name: POOL },
      spec: { scalableResourceSelector: { matchLabels: {} } },
    },
    {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: POOL },
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: 'karpenter.cluster.x-k8s.io', kind: 'ClusterAPINodeClass', name: POOL },
            taints: [{ key: 'realcapi-md', effect: 'NoSchedule' }],
            requirements: [],
            expireAfter: 'Never',
          },
        },
        disruption: {
          consolidationPolicy: 'WhenEmptyOrUnderutilized',
          consolidateAfter: '5s',
          budgets: [{ nodes: '100%' }],
        },
      },
    },
  ];
}

/** A Deployment of `replicas` pods of 1.5 CPU (one per 2-CPU Machine) that only fit this file's pool. */
function inflate(replicas: number): unknown {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'inflate', namespace: NS },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'inflate' } },
      template: {
        metadata: { labels: { app: 'inflate' } },
        spec: {
          terminationGracePeriodSeconds: 0,
          nodeSelector: { 'karpenter.sh/nodepool': POOL },
          tolerations: [{ key: 'realcapi-md', operator: 'Exists', effect: 'NoSchedule' }],
          containers: [
            {
              name: 'pause',
              image: 'registry.k8s.io/pause:3.10',
              resources: { requests: { cpu: '1500m', memory: '256Mi' } },
            },
          ],
        },
      },
    },
  };
}

/** The deployment's live Machines (not being deleted). */
async function machines(): Promise<Obj[]> {
  return (await list('machines', `cluster.x-k8s.io/deployment-name=${MD}`)).filter(
    (m) => !m.metadata.deletionTimestamp,
  );
}

/** The pool's NodeClaims (not being deleted). */
async function nodeClaims(): Promise<Obj[]> {
  return (await list('nodeclaims', `karpenter.sh/nodepool=${POOL}`, null)).filter(
    (n) => !n.metadata.deletionTimestamp,
  );
}

/** The MachineDeployment's MachineSets. */
async function machineSets(): Promise<Obj[]> {
  return list('machinesets', `cluster.x-k8s.io/deployment-name=${MD}`);
}

beforeAll(async () => {
  kc = clusterKubeconfig();
  capi = await startRealCAPI(kc);
  console.log(
    `realcapi-clusterapi: ensure ${(capi.timings.ensureMs / 1000).toFixed(1)} s, manager ready ${(capi.timings.readyMs / 1000).toFixed(1)} s (${capi.dir})`,
  );
  await applyDocs(kc, kwokInfraCRDs(), 'the KwokMachine CRDs');
  const est = await kubectl(kc, [
    'wait',
    '--for',
    'condition=Established',
    '--timeout',
    '60s',
    'crd/kwokmachines.infrastructure.cluster.x-k8s.io',
    'crd/kwokmachinetemplates.infrastructure.cluster.x-k8s.io',
  ]);
  if (est.code !== 0) throw new Error(`KwokMachine CRDs not established: ${est.stderr}`);
  const apiPort = /https:\/\/127\.0\.0\.1:(\d+)/.exec(
    await k('config', 'view', '--minify', '-o', 'jsonpath={.clusters[0].cluster.server}'),
  )?.[1];
  await applyDocs(
    kc,
    clusterObjects(readFileSync(kc).toString('base64'), apiPort ?? '6443'),
    'the Cluster objects',
  );
  await patchStatus('awscluster', CLUSTER, { ready: true, initialization: { provisioned: true } });
  await patchStatus('kubeadmcontrolplane', `${CLUSTER}-control-plane`, {
    initialization: { controlPlaneInitialized: true },
    version: 'v1.33.1',
    replicas: 1,
    readyReplicas: 1,
    availableReplicas: 1,
    upToDateReplicas: 1,
  });
  await applyDocs(kc, deploymentObjects(), 'the MachineDeployment and its KwokMachineTemplate');
  infra = startKwokInfra(kc, NS);
  ctl = await startController(kc, [
    '--cloud-provider',
    'clusterapi',
    '--cluster-api-kubeconfig',
    kc,
    '--cluster-api-namespace',
    NS,
    '--cluster-api-cluster-name',
    CLUSTER,
    '--install-crds',
  ]);
  await until(
    async () =>
      (await kubectl(kc, ['get', 'crd', 'clusterapinodeclasses.karpenter.cluster.x-k8s.io'])).code === 0,
    'the ClusterAPINodeClass CRD',
    60_000,
    500,
  );
  await applyDocs(kc, workloadObjects(), 'the ClusterAPINodeClass and NodePool');
}, 25 * 60_000);

afterAll(async () => {
  // NodeClaims first (their finalizers need capenter), then the Cluster (Machines' finalizers need CAPI).
  await kubectl(kc, ['delete', 'deployment', 'inflate', '-n', NS, '--ignore-not-found', '--wait=false']);
  await kubectl(kc, ['delete', 'nodepool', POOL, '--ignore-not-found', '--wait=false']);
  await until(async () => (await nodeClaims()).length === 0, 'NodeClaims gone', 90_000, 1000).catch((err) =>
    console.log(String(err)),
  );
  await kubectl(kc, ['delete', 'cluster', CLUSTER, '-n', NS, '--ignore-not-found', '--wait=false']);
  await until(async () => (await list('machines')).length === 0, 'Machines gone', 90_000, 1000).catch((err) =>
    console.log(String(err)),
  );
  await kubectl(kc, ['delete', 'namespace', NS, '--wait=false']);
  await kubectl(kc, ['delete', 'clusterapinodeclass', POOL, '--ignore-not-found', '--wait=false']);
  const noisy = new Map<string, number>();
  for (const l of ctl?.logs ?? [])
    if (/^(error|warn)$/i.test(l.level)) noisy.set(l.message, (noisy.get(l.message) ?? 0) + 1);
  console.log(`realcapi-clusterapi: capenter warn/error lines ${JSON.stringify([...noisy])}`);
  await ctl?.stop();
  await infra?.stop();
  await capi?.stop();
  if (infra?.errors.length) console.log(`kwok infra errors:\n${infra.errors.slice(0, 5).join('\n')}`);
}, 300_000);

describe('clusterapi provider under the real Cluster API v1.14.2 MachineDeployment/MachineSet/Machine controllers', () => {
  it('CAPI defaults the MachineDeployment (replicas = min-size 0, selector) and the NodeClass is Ready', async () => {
    const md = await get('machinedeployment', MD);
    expect(md.spec?.replicas).toBe(0);
    expect((md.spec?.selector as { matchLabels?: Record<string, string> } | undefined)?.matchLabels).toEqual({
      'cluster.x-k8s.io/cluster-name': CLUSTER,
      'cluster.x-k8s.io/deployment-name': MD,
    });
    const nc = await until(
      async () => {
        const o = await get('clusterapinodeclass', POOL, null);
        return cond(o, 'Ready')?.status === 'True' ? o : undefined;
      },
      'ClusterAPINodeClass Ready',
      60_000,
      500,
    );
    expect(cond(nc, 'MachineDeploymentsReady')?.reason).toBe('MachineDeploymentsReady');
  });

  it('scales up: replicas = NodeClaims, the MachineSet makes the Machines, each bound, Running with its Node', async () => {
    const t0 = Date.now();
    // every phase each Machine shows while it comes up (CAPI's: Pending, Provisioning, Provisioned, Running)
    const phases = new Map<string, string[]>();
    const observe = async (): Promise<void> => {
      for (const m of await machines()) {
        const seen = phases.get(m.metadata.name) ?? [];
        const p = m.status?.phase ?? '(none)';
        if (seen.at(-1) !== p) seen.push(p);
        phases.set(m.metadata.name, seen);
      }
    };
    await applyDocs(kc, [inflate(3)], 'the inflate Deployment');
    await until(
      async () => {
        await observe();
        const pods = await list('pods', 'app=inflate');
        return pods.length === 3 && pods.every((p) => p.status?.phase === 'Running');
      },
      'the 3 inflate pods Running',
      240_000,
      1000,
    );
    const upMs = Date.now() - t0;
    // CAPI sets a Machine's nodeRef (and so phase Running) from its own watch of the workload cluster, which can
    // trail the pods by a few seconds under load: keep observing until every Machine has reached Running.
    await until(
      async () => {
        await observe();
        return phases.size > 0 && [...phases.values()].every((seen) => seen.at(-1) === 'Running');
      },
      `every Machine Running (phases seen so far are logged below)`,
      120_000,
      1000,
    ).catch((err) => console.log(String(err)));
    const claims = await nodeClaims();
    const ms = await machines();
    const md = await get('machinedeployment', MD);
    const sets = await machineSets();
    console.log(
      `realcapi-clusterapi: 3 pods Running ${(upMs / 1000).toFixed(1)} s after apply; MD status ${JSON.stringify(md.status)}; Machine phases seen ${JSON.stringify([...phases])}; a Machine: ${JSON.stringify({ metadata: ms[0]?.metadata, status: ms[0]?.status })}; MachineSet status ${JSON.stringify(sets[0]?.status)}`,
    );
    for (const seen of phases.values()) {
      expect(seen.at(-1)).toBe('Running');
      for (const p of seen)
        expect(['(none)', 'Pending', 'Provisioning', 'Provisioned', 'Running']).toContain(p);
    }
    expect(claims).toHaveLength(3);
    expect(md.spec?.replicas).toBe(3);
    expect(sets).toHaveLength(1);
    expect(sets[0]!.spec?.replicas).toBe(3);
    expect(ms).toHaveLength(3);
    for (const c of claims) {
      expect(cond(c, 'Initialized')?.status).toBe('True');
      const ref = c.metadata.annotations?.['karpenter.cluster.x-k8s.io/machine'];
      expect(ref?.startsWith(`${NS}/`)).toBe(true);
      const name = ref?.slice(NS.length + 1);
      const m = ms.find((x) => x.metadata.name === name);
      expect(m, `NodeClaim ${c.metadata.name} → Machine ${name}`).toBeDefined();
      expect(m!.metadata.labels?.['karpenter.cluster.x-k8s.io/nodeclaim']).toBe(c.metadata.name);
      expect(m!.spec?.providerID).toBe(`kwok://${NS}/${name}`);
      expect(c.status?.providerID).toBe(m!.spec?.providerID);
      expect(c.metadata.annotations?.['karpenter.cluster.x-k8s.io/machinedeployment']).toBe(`${NS}/${MD}`);
      expect(m!.status?.phase).toBe('Running');
      expect(m!.status?.nodeRef?.name).toBe(name);
      const node = await get('node', name!, null);
      expect(node.spec?.providerID).toBe(m!.spec?.providerID);
      expect(node.metadata.labels?.['karpenter.sh/nodepool']).toBe(POOL);
      // CAPI's Machine controller synced the Node: owner annotations, uninitialized taint lifted
      expect(node.metadata.annotations?.['cluster.x-k8s.io/machine']).toBe(name);
      expect(node.metadata.annotations?.['cluster.x-k8s.io/owner-kind']).toBe('MachineSet');
      expect(node.metadata.annotations?.['cluster.x-k8s.io/owner-name']).toBe(sets[0]!.metadata.name);
      const taints = (node.spec?.taints ?? []).map((t) => t.key);
      expect(taints).not.toContain('node.cluster.x-k8s.io/uninitialized');
      expect(taints).not.toContain('karpenter.sh/unregistered');
    }
    const status = await until(
      async () => {
        const s = (await get('machinedeployment', MD)).status;
        return s?.replicas === 3 && s.readyReplicas === 3 && s.availableReplicas === 3 ? s : undefined;
      },
      'MachineDeployment status.replicas, readyReplicas and availableReplicas 3',
      60_000,
      500,
    );
    expect(status.upToDateReplicas).toBe(3);
    expect(status.phase).toBe('Running');
  });

  it('consolidation deletes exactly the chosen Machine (delete-machine annotation) and the replicas drop to 2', async () => {
    const before = await machines();
    const claimsBefore = (await nodeClaims()).map((c) => c.metadata.name);
    const t0 = Date.now();
    // every version of every Machine (a watch: the annotated Machine can be gone within a second)
    const annotated = new Set<string>();
    const watch = spawn(
      process.env.CAPENTER_TEST_KUBECTL || 'kubectl',
      [
        '--kubeconfig',
        kc,
        'get',
        'machines',
        '-n',
        NS,
        '-w',
        '-o',
        'jsonpath={.metadata.name}{" "}{.metadata.annotations}{"\\n"}',
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let seen = 0;
    let buf = '';
    watch.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const line of lines) {
        // `<name> <annotations as JSON>`; the annotation's value is ""
        const name = line.trim().split(' ')[0];
        seen++;
        if (name && line.includes('"cluster.x-k8s.io/delete-machine"')) annotated.add(name);
      }
    });
    await until(() => seen >= before.length, 'the Machine watch listing the Machines', 30_000, 100);
    await k('scale', 'deployment', 'inflate', '-n', NS, '--replicas', '2');
    await until(
      async () => (await nodeClaims()).length === 2 && (await machines()).length === 2,
      'one NodeClaim and its Machine gone',
      180_000,
      300,
    );
    watch.kill();
    console.log(
      `realcapi-clusterapi: consolidated one Machine away ${((Date.now() - t0) / 1000).toFixed(1)} s after scaling inflate to 2`,
    );
    const after = await machines();
    const gone = before.filter((m) => !after.some((a) => a.metadata.name === m.metadata.name));
    expect(gone).toHaveLength(1);
    expect([...annotated]).toEqual([gone[0]!.metadata.name]);
    // the surviving Machines are the ones from before, still bound to the surviving NodeClaims
    const claims = await nodeClaims();
    // no replacement (e.g. a MachineTemplateDrift from CAPI's defaulted MachineSet template): the survivors are old
    expect(claims.every((c) => claimsBefore.includes(c.metadata.name))).toBe(true);
    expect(after.map((m) => m.metadata.labels?.['karpenter.cluster.x-k8s.io/nodeclaim']).sort()).toEqual(
      claims.map((c) => c.metadata.name).sort(),
    );
    const md = await get('machinedeployment', MD);
    expect(md.spec?.replicas).toBe(2);
    const sets = await machineSets();
    expect(sets[0]!.spec?.replicas).toBe(2);
    await until(
      async () =>
        (await list('nodes', undefined, null)).every((n) => n.metadata.name !== gone[0]!.metadata.name),
      'the deleted Machine’s Node gone',
      60_000,
      500,
    );
    const pods = await list('pods', 'app=inflate');
    expect(pods.filter((p) => p.status?.phase === 'Running')).toHaveLength(2);
    // the MachineSet CAPI made from the deployment is not a template drift (capenter compares their templates)
    for (const c of claims) expect(cond(c, 'Drifted')?.status).not.toBe('True');
  });

  it('scales to zero: no NodeClaim, MachineDeployment and MachineSet replicas 0, no Machine, no Node left', async () => {
    await k('scale', 'deployment', 'inflate', '-n', NS, '--replicas', '0');
    await until(
      async () => (await nodeClaims()).length === 0 && (await list('machines')).length === 0,
      'NodeClaims and Machines gone',
      180_000,
      500,
    );
    expect((await get('machinedeployment', MD)).spec?.replicas).toBe(0);
    expect((await machineSets())[0]!.spec?.replicas).toBe(0);
    await until(
      async () => (await list('nodes', `karpenter.sh/nodepool=${POOL}`, null)).length === 0,
      'the pool’s Nodes gone',
      60_000,
      500,
    );
    const md = await until(
      async () => {
        const o = await get('machinedeployment', MD);
        return o.status?.replicas === 0 ? o : undefined;
      },
      'MachineDeployment status.replicas 0',
      60_000,
      500,
    );
    expect(md.status?.phase).toBe('Running');
  });
});
