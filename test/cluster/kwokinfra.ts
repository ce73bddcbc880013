/**
 * A minimal Cluster API infrastructure provider for the real-CAPI tests (test code only): CRDs `KwokMachine` and
 * `KwokMachineTemplate` (group `infrastructure.cluster.x-k8s.io`, version `v1alpha1`, CRD label
 * `cluster.x-k8s.io/v1beta2: v1alpha1` so CAPI's contract lookup finds them) and a polling controller that does what
 * a real infrastructure provider does for the v1beta2 InfraMachine contract (cluster-api
 * docs/book/src/developer/providers/contracts/infra-machine.md): for each KwokMachine that CAPI's MachineSet
 * controller cloned from the template it "launches an instance" — sets `spec.providerID` (`kwok://<ns>/<name>`), then
 * `status.initialization.provisioned: true` (v1beta2) and `status.ready: true` (v1beta1) and `status.addresses` —
 * and then the instance "boots": a kwok Node (`kwok.x-k8s.io/node: fake`) with that provider ID registers, with the
 * capacity of the KwokMachine's `spec.cpu`/`spec.memory` and the taints kubeadm join would register with
 * (`karpenter.sh/unregistered:NoExecute`, `node.cluster.x-k8s.io/uninitialized:NoSchedule`). A Node whose
 * KwokMachine is gone is deleted (the cloud-controller-manager's job). No finalizer: deleting a KwokMachine is
 * instant, as an instance that terminates at once.
 */
import { kubectl } from './helpers.ts';

/** One KwokMachine as read from the API server. */
interface KwokMachine {
  metadata: { name: string; namespace: string; creationTimestamp?: string };
  spec?: { providerID?: string; cpu?: string; memory?: string };
  status?: { ready?: boolean; initialization?: { provisioned?: boolean } };
}

/** The KwokMachine and KwokMachineTemplate CRDs (schema-less spec/status, status subresource, contract label). */
export function kwokInfraCRDs(): unknown[] {
  const crd = (kind: string, plural: string) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.infrastructure.cluster.x-k8s.io`,
      labels: { 'cluster.x-k8s.io/v1beta2': 'v1alpha1' },
    },
    spec: {
      group: 'infrastructure.cluster.x-k8s.io',
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              },
            },
          },
        },
      ],
    },
  });
  return [crd('KwokMachine', 'kwokmachines'), crd('KwokMachineTemplate', 'kwokmachinetemplates')];
}

/** The running stand-in: counters and timestamps of what it did (ms since epoch), and stop. */
export interface KwokInfra {
  /** KwokMachine name → when it was provisioned and when its Node was created. */
  launched: Map<string, { provisionedAt: number; nodeAt: number }>;
  /** Names of the Nodes deleted because their KwokMachine was gone. */
  reaped: string[];
  /** Errors of passes (a pass that fails is retried on the next one). */
  errors: string[];
  stop(): Promise<void>;
}

/** `kubectl <args>`, throwing with its stderr. */
async function k(kc: string, args: string[], input?: string): Promise<string> {
  const r = await kubectl(kc, args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Launches one KwokMachine: provider ID, provisioned status, then its kwok Node. */
async function launch(kc: string, m: KwokMachine, infra: KwokInfra): Promise<void> {
  const { name, namespace } = m.metadata;
  const providerID = `kwok://${namespace}/${name}`;
  if (m.spec?.providerID !== providerID)
    await k(kc, [
      'patch',
      'kwokmachine',
      name,
      '-n',
      namespace,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { providerID } }),
    ]);
  await k(kc, [
    'patch',
    'kwokmachine',
    name,
    '-n',
    namespace,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({
      status: {
        ready: true,
        initialization: { provisioned: true },
        addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
      },
    }),
  ]);
  const provisionedAt = Date.now();
  const now = new Date().toISOString();
  const resources = { cpu: m.spec?.cpu ?? '2', memory: m.spec?.memory ?? '4Gi', pods: '110' };
  const node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/os': 'linux',
        'kwok.x-k8s.io/node': 'fake',
      },
      annotations: { 'kwok.x-k8s.io/node': 'fake', 'realcapi.test/kwokmachine': `${namespace}/${name}` },
    },
    spec: {
      providerID,
      taints: [
        { key: 'karpenter.sh/unregistered', effect: 'NoExecute' },
        { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' },
      ],
    },
    status: {
      capacity: resources,
      allocatable: resources,
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'KubeletNotReady',
          message: 'booting',
          lastTransitionTime: now,
          lastHeartbeatTime: now,
        },
      ],
      nodeInfo: { architecture: 'amd64', operatingSystem: 'linux', kubeletVersion: 'v1.33.1' },
    },
  };
  const r = await kubectl(kc, ['create', '-f', '-'], JSON.stringify(node));
  if (r.code !== 0 && !/AlreadyExists|already exists/.test(r.stderr))
    throw new Error(`creating Node ${name}: ${r.stderr}`);
  infra.launched.set(name, { provisionedAt, nodeAt: Date.now() });
}

/** One pass over the KwokMachines of `namespace` and the Nodes this stand-in made. */
async function pass(kc: string, namespace: string, infra: KwokInfra): Promise<void> {
  const machines = (
    JSON.parse(await k(kc, ['get', 'kwokmachines', '-n', namespace, '-o', 'json'])) as {
      items: KwokMachine[];
    }
  ).items;
  for (const m of machines) {
    const done = m.status?.initialization?.provisioned === true && infra.launched.has(m.metadata.name);
    if (!done) await launch(kc, m, infra);
  }
  const names = new Set(machines.map((m) => m.metadata.name));
  const nodes = (
    JSON.parse(await k(kc, ['get', 'nodes', '-o', 'json'])) as {
      items: Array<{ metadata: { name: string; annotations?: Record<string, string> } }>;
    }
  ).items;
  for (const n of nodes) {
    const owner = n.metadata.annotations?.['realcapi.test/kwokmachine'];
    if (!owner?.startsWith(`${namespace}/`) || names.has(n.metadata.name)) continue;
    await kubectl(kc, ['delete', 'node', n.metadata.name, '--ignore-not-found', '--wait=false']);
    infra.reaped.push(n.metadata.name);
  }
}

/** Starts the controller for KwokMachines of `namespace` (a pass every `periodMs`). */
export function startKwokInfra(kc: string, namespace: string, periodMs = 300): KwokInfra {
  let stopped = false;
  const infra: KwokInfra = {
    launched: new Map(),
    reaped: [],
    errors: [],
    async stop() {
      stopped = true;
      await loop;
    },
  };
  const loop = (async () => {
    while (!stopped) {
      try {
        await pass(kc, namespace, infra);
      } catch (err) {
        infra.errors.push(String(err));
      }
      await new Promise((r) => setTimeout(r, periodMs));
    }
  })();
  return infra;
}
