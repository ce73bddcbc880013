/**
 * The Helm chart on a real control plane (`npm run test:cluster`): `helm install` of `charts/capenter` is accepted
 * object by object, the CRDs stay after `helm uninstall`, and the ServiceAccount's RBAC is proven with
 * `kubectl auth can-i --as=system:serviceaccount:<ns>:capenter` for every verb of every rule (the rules equal the
 * requests the controllers make, see test/cli/rbac.test.ts) and refused for every other verb on the same resources.
 * Then `capenter controller` runs with that ServiceAccount's token: it becomes ready, holds the Lease in the release
 * namespace and reconciles a NodePool (its status written), all under the chart's RBAC.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KubeClient } from '../../src/kube/client.ts';
import { chartRules } from '../cli/api-requests.ts';
import { CHART, helmBinary, renderChart } from '../cli/helm-tools.ts';
import { type ControllerProcess, clusterKubeconfig, kubectl, startController, until } from './helpers.ts';

const NS = 'capenter-helm';
const SA = `system:serviceaccount:${NS}:capenter`;
/** The kwok provider (its NodeClass is what the controller test reconciles) and the required cluster name. */
const VALUES = ['--set', 'cloudProvider=kwok', '--set', 'settings.clusterName=helm-test'];
const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];

function helm(args: string[]): { code: number | null; out: string } {
  const r = spawnSync(helmBinary(), [...args, '--kubeconfig', clusterKubeconfig()], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout + r.stderr };
}

/** `kubectl auth can-i` for one verb on `group`/`resource[/sub]`, as the chart's ServiceAccount. */
async function canI(verb: string, group: string, resource: string, namespace?: string): Promise<string> {
  const [res, sub] = resource.split('/');
  const args = ['auth', 'can-i', verb, group ? `${res}.${group}` : res!, `--as=${SA}`];
  if (sub) args.push(`--subresource=${sub}`);
  args.push(...(namespace ? ['-n', namespace] : ['--all-namespaces']));
  const r = await kubectl(clusterKubeconfig(), args);
  return `${verb} ${group || 'core'} ${resource}${namespace ? ` -n ${namespace}` : ''}: ${r.stdout.trim() || r.stderr.trim()}`;
}

/**
 * A SubjectAccessReview for the chart's ServiceAccount: `kubectl auth can-i` reads `machinepools.cluster.x-k8s.io`
 * as resource.version.group when no CRD serves it, so kinds without a CRD on this cluster are asked this way.
 */
async function review(verb: string, group: string, resource: string, namespace: string): Promise<string> {
  const [res, sub] = resource.split('/');
  const body = JSON.stringify({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user: SA,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${NS}`, 'system:authenticated'],
      resourceAttributes: { verb, group, resource: res, ...(sub ? { subresource: sub } : {}), namespace },
    },
  });
  const r = await kubectl(
    clusterKubeconfig(),
    ['create', '-o', 'jsonpath={.status.allowed}', '-f', '-'],
    body,
  );
  const out = r.stdout.trim();
  const answer = out === 'true' ? 'yes' : out === 'false' || out === '' ? 'no' : out;
  return `${verb} ${group || 'core'} ${resource} -n ${namespace}: ${r.code === 0 ? answer : r.stderr.trim()}`;
}

/** Runs `fns` with at most `n` at a time. */
async function limited<T>(fns: Array<() => Promise<T>>, n = 6): Promise<T[]> {
  const out: T[] = [];
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < fns.length) {
        const k = i++;
        out[k] = await fns[k]!();
      }
    }),
  );
  return out;
}

let controller: ControllerProcess | undefined;
beforeAll(() => {
  helmBinary(); // built once from the Go module proxy on a fresh machine
}, 900_000);
afterAll(async () => {
  await controller?.stop();
  helm(['uninstall', 'capenter', '-n', NS]);
});

describe('helm install on a real control plane', () => {
  it('installs every object, keeps the CRDs on uninstall, and grants exactly the rules', async () => {
    const kc = clusterKubeconfig();
    helm(['uninstall', 'capenter', '-n', NS]); // a previous run on a kept cluster
    const install = helm(['install', 'capenter', CHART, '-n', NS, '--create-namespace', ...VALUES]);
    expect(install.code, install.out).toBe(0);
    // every rendered object exists
    for (const o of renderChart(NS, [], VALUES)) {
      const args: string[] = ['get', o.kind ?? '', o.metadata?.name ?? '', '-o', 'name'];
      if (o.metadata?.namespace) args.push('-n', o.metadata.namespace);
      const r = await kubectl(kc, args);
      expect(r.code, `${o.kind}/${o.metadata?.name}: ${r.stderr}`).toBe(0);
    }
    for (const crd of [
      'nodepools.karpenter.sh',
      'nodeclaims.karpenter.sh',
      'ec2nodeclasses.karpenter.k8s.aws',
    ])
      expect((await kubectl(kc, ['get', 'crd', crd, '-o', 'name'])).code, crd).toBe(0);

    // RBAC: every granted verb is "yes", every other verb on the same resources "no"
    const rules = chartRules();
    const yes: Array<() => Promise<string>> = [];
    const no: Array<() => Promise<string>> = [];
    for (const [list, ns] of [
      [rules.cluster, undefined],
      [rules.namespaced, NS],
    ] as const)
      for (const rule of list)
        for (const g of rule.apiGroups)
          for (const res of rule.resources)
            for (const v of VERBS) {
              // subresources take the verbs of their request only (create for eviction, patch for status)
              if (res.includes('/') && !['create', 'get', 'update', 'patch'].includes(v)) continue;
              (rule.verbs.includes(v) ? yes : no).push(() => canI(v, g, res, ns));
            }
    // the Lease is granted in the release namespace only
    no.push(() => canI('update', 'coordination.k8s.io', 'leases', 'default'));
    no.push(() => canI('get', '', 'secrets'));
    const granted = await limited(yes);
    const refused = await limited(no);
    expect(
      granted.filter((l) => !l.endsWith(': yes')),
      'verbs the controllers use must be allowed',
    ).toEqual([]);
    expect(
      refused.filter((l) => !l.endsWith(': no')),
      'verbs the controllers do not use must be refused',
    ).toEqual([]);
    expect(granted.length).toBeGreaterThanOrEqual(40);
  });

  it('the controller runs under the ServiceAccount: ready, leads from the release namespace, reconciles', async () => {
    const kc = clusterKubeconfig();
    const token = await kubectl(kc, ['create', 'token', 'capenter', '-n', NS, '--duration=1h']);
    expect(token.code, token.stderr).toBe(0);
    const admin = parse(readFileSync(kc, 'utf8')) as {
      clusters: Array<{ cluster: { server: string; 'certificate-authority-data': string } }>;
    };
    const cluster = admin.clusters[0]!.cluster;
    const saKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: real, cluster: {server: "${cluster.server}", certificate-authority-data: "${cluster['certificate-authority-data']}"}}]
users: [{name: capenter, user: {token: "${token.stdout.trim()}"}}]
contexts: [{name: real, context: {cluster: real, user: capenter, namespace: ${NS}}}]
current-context: real
`;
    const path = `${process.env.TMPDIR ?? '/tmp'}/capenter-helm-sa-${process.pid}.kubeconfig`;
    (await import('node:fs')).writeFileSync(path, saKubeconfig, { mode: 0o600 });
    controller = await startController(path, [
      '--disable-leader-election=false',
      '--leader-election-namespace',
      NS,
    ]);
    await until(
      async () => (await controller!.readyz()).status === 200,
      '/readyz 200 under the chart RBAC',
      60_000,
    );
    const client = KubeClient.fromKubeconfig(kc);
    try {
      await until(
        async () =>
          (
            (await client.tryGet('Lease', 'karpenter-leader-election', NS)) as {
              spec?: { holderIdentity?: string };
            }
          )?.spec?.holderIdentity,
        'the Lease held in the release namespace',
        60_000,
      );
      await client.apply(
        {
          apiVersion: 'karpenter.kwok.sh/v1alpha1',
          kind: 'KWOKNodeClass',
          metadata: { name: 'helm-test' },
          spec: {},
        },
        { fieldManager: 'helm-test', force: true },
      );
      await client.apply(
        {
          apiVersion: 'karpenter.sh/v1',
          kind: 'NodePool',
          metadata: { name: 'helm-test' },
          spec: {
            template: {
              spec: {
                nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'helm-test' },
                requirements: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }],
              },
            },
          },
        },
        { fieldManager: 'helm-test', force: true },
      );
      await until(
        async () =>
          (
            (await client.get('NodePool', 'helm-test')) as {
              status?: { conditions?: Array<{ type: string; status: string }> };
            }
          ).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        'NodePool Ready (status written by the controller)',
        60_000,
      );
      const forbidden = controller.logs.filter((l) => /forbidden/i.test(JSON.stringify(l)));
      expect(forbidden, 'no request refused by RBAC').toEqual([]);
    } finally {
      await client.tryDelete('NodePool', 'helm-test');
      await client.tryDelete('KWOKNodeClass', 'helm-test');
      client.close();
    }
    expect(await controller.stop()).toBe(0);
    controller = undefined;
    // uninstall keeps the CRDs (Helm never deletes crds/)
    const un = helm(['uninstall', 'capenter', '-n', NS]);
    expect(un.code, un.out).toBe(0);
    expect((await kubectl(kc, ['get', 'crd', 'nodepools.karpenter.sh', '-o', 'name'])).code).toBe(0);
  });

  it('capi.enabled (this cluster is the management cluster): SubjectAccessReviews grant every rule of the KarpenterMachinePool controller, and a default install none', async () => {
    const kc = clusterKubeconfig();
    helm(['uninstall', 'capenter', '-n', NS]);
    const capi = [...VALUES, '--set', 'capi.enabled=true'];
    const install = helm(['install', 'capenter', CHART, '-n', NS, '--create-namespace', ...capi]);
    expect(install.code, install.out).toBe(0);
    try {
      const cm = await kubectl(kc, ['get', 'configmap', '-n', NS, '-o', 'name']);
      expect(cm.stdout).toMatch(/configmap\/capenter-management-kubeconfig/);
      const rules = parse(
        readFileSync(
          new URL('../../charts/capenter/files/clusterrole-rules-capi.yaml', import.meta.url),
          'utf8',
        ),
      ) as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
      const yes: Array<() => Promise<string>> = [];
      for (const rule of rules)
        for (const g of rule.apiGroups)
          for (const res of rule.resources)
            for (const v of rule.verbs)
              yes.push(() =>
                review(
                  v,
                  g,
                  res === '*' ? (g.startsWith('bootstrap') ? 'kubeadmconfigs' : 'kubeadmcontrolplanes') : res,
                  'default',
                ),
              );
      // the API server's RBAC cache sees the re-created ClusterRole a moment after helm returns
      await until(
        async () => (await review('get', 'cluster.x-k8s.io', 'machinepools', 'default')).endsWith(': yes'),
        'the capi rules in the RBAC cache',
        60_000,
      );
      const granted = await limited(yes);
      expect(granted.filter((l) => !l.endsWith(': yes'))).toEqual([]);
      expect(granted.length).toBe(
        rules.reduce((n, r) => n + r.apiGroups.length * r.resources.length * r.verbs.length, 0),
      );
      expect(granted.length).toBeGreaterThanOrEqual(30);
      // the static identity's Secret gets CAPA's owner reference: patch of Secrets in the release namespace only
      expect(await review('patch', '', 'secrets', NS)).toMatch(/: yes$/);
      expect(await review('patch', '', 'secrets', 'default')).toMatch(/: no$/);
    } finally {
      const un = helm(['uninstall', 'capenter', '-n', NS]);
      expect(un.code, un.out).toBe(0);
    }
    // the default install grants none of them
    const plain = helm(['install', 'capenter', CHART, '-n', NS, '--create-namespace', ...VALUES]);
    expect(plain.code, plain.out).toBe(0);
    try {
      await until(
        async () => (await review('get', 'cluster.x-k8s.io', 'machinepools', 'default')).endsWith(': no'),
        'the capi rules gone from the RBAC cache',
        60_000,
      );
      expect(
        await review('patch', 'infrastructure.cluster.x-k8s.io', 'karpentermachinepools/status', 'default'),
      ).toMatch(/: no$/);
      expect(await review('update', 'cluster.x-k8s.io', 'machinepools', 'default')).toMatch(/: no$/);
    } finally {
      helm(['uninstall', 'capenter', '-n', NS]);
    }
  });

  it('capi.watchNamespace: Secrets are listed and watched in that namespace only (a Role there), nowhere else', async () => {
    const kc = clusterKubeconfig();
    helm(['uninstall', 'capenter', '-n', NS]);
    await kubectl(kc, ['create', 'namespace', 'helm-kmp-a']); // exists already on a kept cluster: fine
    const set = [...VALUES, '--set', 'capi.enabled=true', '--set', 'capi.watchNamespace=helm-kmp-a'];
    const install = helm(['install', 'capenter', CHART, '-n', NS, '--create-namespace', ...set]);
    expect(install.code, install.out).toBe(0);
    try {
      await until(
        async () => (await review('watch', '', 'secrets', 'helm-kmp-a')).endsWith(': yes'),
        'the Role of helm-kmp-a in the RBAC cache',
        60_000,
      );
      const answers = await limited(
        ['get', 'list', 'watch'].flatMap((v) => [
          () => review(v, '', 'secrets', 'helm-kmp-a'),
          () => review(v, '', 'secrets', 'helm-kmp-b'),
          () => review(v, '', 'secrets', ''),
        ]),
      );
      expect(answers).toEqual([
        'get core secrets -n helm-kmp-a: yes',
        'get core secrets -n helm-kmp-b: no',
        'get core secrets -n : no',
        'list core secrets -n helm-kmp-a: yes',
        'list core secrets -n helm-kmp-b: no',
        'list core secrets -n : no',
        'watch core secrets -n helm-kmp-a: yes',
        'watch core secrets -n helm-kmp-b: no',
        'watch core secrets -n : no',
      ]);
      // the rest of the KarpenterMachinePool rules stay cluster-wide
      expect(
        await review('watch', 'infrastructure.cluster.x-k8s.io', 'karpentermachinepools', 'helm-kmp-b'),
      ).toMatch(/: yes$/);
    } finally {
      const un = helm(['uninstall', 'capenter', '-n', NS]);
      expect(un.code, un.out).toBe(0);
    }
  });
});
