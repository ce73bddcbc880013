/**
 * docs/capa-guide.md (issue 29): its Helm values blocks render with the chart into the flags, volumes and
 * management-cluster RBAC the guide describes. Here rather than in test/docs/capa-guide.test.ts because Helm comes
 * from the cache `npm run test:cluster` fills (scripts/ensure-helm.sh), never from inside `npm test`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ROOT } from '../../scripts/build.ts';
import type { KubeObject } from '../../src/apis/core.ts';
import { CHART, helm } from '../cli/helm-tools.ts';

const GUIDE = readFileSync(join(ROOT, 'docs', 'capa-guide.md'), 'utf8');
const BLOCKS = [...GUIDE.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
const VALUES = BLOCKS.filter((b) => /^# values-[a-z]+\.yaml\n/.test(b));
const dir = mkdtempSync(join(tmpdir(), 'capenter-capa-guide-helm-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The management-cluster requests of the KarpenterMachinePool controller (`verb group resource`), from its code:
 * informers (list, watch) on KMPs, MachinePools, Clusters, AWSClusters (controller.ts); KMP finalizer/annotation
 * patches and status writes (steps/bootstrap.ts, finalize.ts, context.ts); MachinePool annotation and replicas
 * (steps/resolve.ts, report.ts); a Secret informer and Secrets by name (controller.ts, steps/bootstrap.ts,
 * workload.ts; recorded by test/capi/rbac.test.ts); KubeadmConfig and control-plane
 * object by reference, control-plane Machines (steps/bootstrap.ts, generate.ts); CAPA identities, Namespaces and
 * the static identity's Secret (src/cloudprovider/aws/identity.ts); Events (src/kube/events.ts).
 */
const KMP_REQUESTS = [
  'list infrastructure.cluster.x-k8s.io karpentermachinepools',
  'watch infrastructure.cluster.x-k8s.io karpentermachinepools',
  'get infrastructure.cluster.x-k8s.io karpentermachinepools',
  'patch infrastructure.cluster.x-k8s.io karpentermachinepools',
  'patch infrastructure.cluster.x-k8s.io karpentermachinepools/status',
  'list infrastructure.cluster.x-k8s.io awsclusters',
  'watch infrastructure.cluster.x-k8s.io awsclusters',
  'get infrastructure.cluster.x-k8s.io awsclusters',
  'get infrastructure.cluster.x-k8s.io awsclustercontrolleridentities',
  'get infrastructure.cluster.x-k8s.io awsclusterroleidentities',
  'get infrastructure.cluster.x-k8s.io awsclusterstaticidentities',
  'list cluster.x-k8s.io machinepools',
  'watch cluster.x-k8s.io machinepools',
  'patch cluster.x-k8s.io machinepools',
  'list cluster.x-k8s.io clusters',
  'watch cluster.x-k8s.io clusters',
  'get cluster.x-k8s.io clusters',
  'list cluster.x-k8s.io machines',
  'get bootstrap.cluster.x-k8s.io kubeadmconfigs',
  'get controlplane.cluster.x-k8s.io kubeadmcontrolplanes',
  'get core secrets',
  'list core secrets',
  'watch core secrets',
  'get core namespaces',
  'create core events',
  'patch core events',
];

/** Mode A's chart render gives the pod a management-cluster kubeconfig and a ClusterRole with every KMP request. */
function expectManagementAccess(objs: KubeObject[]): void {
  const cm = objs.find(
    (o) => o.kind === 'ConfigMap' && o.metadata?.name === 'capenter-demo-management-kubeconfig',
  ) as (KubeObject & { data: { kubeconfig: string } }) | undefined;
  const kubeconfig = parseAllDocuments(cm?.data.kubeconfig ?? '')[0]?.toJS() as {
    clusters: Array<{ cluster: { server: string } }>;
    users: Array<{ user: { tokenFile: string } }>;
  };
  expect(kubeconfig.clusters[0]?.cluster.server).toBe('https://kubernetes.default.svc');
  expect(kubeconfig.users[0]?.user.tokenFile).toBe('/var/run/secrets/kubernetes.io/serviceaccount/token');
  const role = objs.find((o) => o.kind === 'ClusterRole') as unknown as {
    rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
  };
  const granted = (key: string): boolean => {
    const [verb, group, resource] = key.split(' ') as [string, string, string];
    const g = group === 'core' ? '' : group;
    return role.rules.some(
      (r) =>
        r.apiGroups.includes(g) &&
        (r.resources.includes(resource) || r.resources.includes('*')) &&
        r.verbs.includes(verb),
    );
  };
  expect(KMP_REQUESTS.filter((k) => !granted(k))).toEqual([]);
  const binding = objs.find((o) => o.kind === 'ClusterRoleBinding') as unknown as {
    roleRef: { name: string };
    subjects: Array<{ kind: string; name: string; namespace: string }>;
  };
  expect(binding.roleRef.name).toBe(
    role && (objs.find((o) => o.kind === 'ClusterRole')?.metadata?.name as string),
  );
  expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'capenter-demo', namespace: 'team-a' }]);
}

describe('docs/capa-guide.md with Helm', () => {
  it('the Helm values render: mode A mounts both kubeconfigs and passes the flags; mode B mounts the workload one', () => {
    expect(VALUES).toHaveLength(2);
    const render = (text: string) => {
      const name = /^# (values-[a-z]+\.yaml)/.exec(text)?.[1] as string;
      writeFileSync(join(dir, name), text);
      // as the guide's `helm install capenter-demo charts/capenter -n team-a -f <values>`
      const r = helm(['template', 'capenter-demo', CHART, '--namespace', 'team-a', '-f', join(dir, name)]);
      expect(r.stderr).toBe('');
      const objs = parseAllDocuments(r.stdout)
        .map((d) => d.toJS() as KubeObject | null)
        .filter((o): o is KubeObject => !!o?.kind);
      const dep = objs.find((o) => o.kind === 'Deployment') as unknown as {
        spec: {
          template: {
            spec: { containers: Array<{ args: string[]; volumeMounts?: unknown[] }>; volumes: unknown[] };
          };
        };
      };
      return { objs, pod: dep.spec.template.spec };
    };
    const a = render(VALUES[0] as string);
    expect(a.pod.containers[0]?.args).toEqual([
      'controller',
      '--cloud-provider=aws',
      '--kubeconfig=/etc/capenter/workload/kubeconfig',
      '--install-crds',
      '--capi-management-kubeconfig=/etc/capenter/management/kubeconfig',
    ]);
    expect(a.pod.volumes).toEqual([
      {
        name: 'workload-kubeconfig',
        secret: { secretName: 'demo-kubeconfig', items: [{ key: 'value', path: 'kubeconfig' }] },
      },
      { name: 'management-kubeconfig', configMap: { name: 'capenter-demo-management-kubeconfig' } },
    ]);
    expect(a.pod.containers[0]?.volumeMounts).toEqual([
      { name: 'workload-kubeconfig', mountPath: '/etc/capenter/workload', readOnly: true },
      { name: 'management-kubeconfig', mountPath: '/etc/capenter/management', readOnly: true },
    ]);
    expectManagementAccess(a.objs);
    const sa = a.objs.find((o) => o.kind === 'ServiceAccount');
    expect(sa?.metadata?.annotations?.['eks.amazonaws.com/role-arn']).toBe(
      'arn:aws:iam::111122223333:role/capenter-demo',
    );
    const b = render(VALUES[1] as string);
    expect(b.pod.containers[0]?.args).toEqual([
      'controller',
      '--cloud-provider=clusterapi',
      '--kubeconfig=/etc/capenter/workload/value',
      '--install-crds',
    ]);
    const rules = (
      b.objs.find((o) => o.kind === 'ClusterRole') as unknown as { rules: { resources: string[] }[] }
    ).rules;
    expect(rules.some((r) => r.resources.includes('machinedeployments'))).toBe(true);
  });
});
