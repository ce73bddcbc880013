/**
 * The Helm chart (`charts/capenter`): `helm lint`, `helm template` with the default and the full values
 * (`ci/full-values.yaml`), and what the rendered objects must say — upstream's values map to the registry's settings
 * (each rendered variable parses), RBAC equals the rule files derived from the code, the CRDs are the generated
 * ones, and the Grafana dashboards query only metrics (and labels) the controller exports.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/apis/core.ts';
import { createOperator } from '../../src/operator/operator.ts';
import { embeddedOptions, resolveOperatorOptions, SETTINGS } from '../../src/operator/options.ts';
import { chartRules } from '../cli/api-requests.ts';
import { CHART, helm, helmBinary, renderChart } from '../cli/helm-tools.ts';

const FULL = join(CHART, 'ci', 'full-values.yaml');
/** Variables the chart sets for settings a provider registers on its own branch (issue 9: the aws provider). */
const PROVIDER_SETTINGS = new Set(['INTERRUPTION_QUEUE']);

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

/** The settings a rendered Deployment gives the controller, resolved through the registry (throws if invalid). */
function settingsOf(objs: KubeObject[], namespace: string) {
  const c = deployment(objs).spec.template.spec.containers[0]!;
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) env[e.name] = e.value ?? (e.valueFrom ? namespace : '');
  return { env, options: resolveOperatorOptions({ env }) };
}

// Helm: built from the Go module proxy once (scripts/ensure-helm.sh, cached in ~/.cache/helm-bin; .ci/run builds it in
// the background while `npm test` runs). Part of `npm run test:cluster`, not `npm test`: that never builds Helm.
beforeAll(() => {
  helmBinary();
}, 900_000);

describe('Helm chart', () => {
  it('passes helm lint with the default and the full values', () => {
    for (const args of [[CHART], [CHART, '-f', FULL]]) {
      const r = helm(['lint', '--strict', ...args]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    }
  });

  it('renders the default values: 2 replicas, probes, non-root, read-only root, settings the registry accepts', () => {
    const objs = renderChart('karpenter');
    expect(objs.map((o) => o.kind).sort()).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'ConfigMap',
      'ConfigMap',
      'Deployment',
      'PodDisruptionBudget',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
    ]);
    const d = deployment(objs);
    const pod = d.spec.template.spec;
    const c = pod.containers[0]!;
    expect(d.spec.replicas).toBe(2);
    expect(c.args).toEqual(['controller']);
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
    expect(JSON.stringify(pod.topologySpreadConstraints)).toContain('topology.kubernetes.io/zone');
    expect(byKind(objs, 'PodDisruptionBudget')[0]).toMatchObject({ spec: { maxUnavailable: 1 } });
    const { env, options } = settingsOf(objs, 'karpenter');
    const known = new Set(SETTINGS.map((s) => s.env));
    expect(Object.keys(env).filter((k) => !known.has(k) && !PROVIDER_SETTINGS.has(k))).toEqual([]);
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
    expect((byKind(objs, 'ClusterRole')[0] as { rules?: unknown }).rules).toEqual(chartRules().cluster);
    expect((byKind(objs, 'Role')[0] as { rules?: unknown }).rules).toEqual(chartRules().namespaced);
    expect(byKind(objs, 'Role')[0]!.metadata?.namespace).toBe('karpenter');
  });

  it('renders the full values: upstream value names reach the settings, ServiceMonitor on', () => {
    const objs = renderChart('capenter-system', [FULL]);
    expect(byKind(objs, 'ServiceMonitor')).toHaveLength(1);
    const d = deployment(objs);
    expect(d.spec.replicas).toBe(3);
    expect(d.spec.template.spec.containers[0]!.args).toEqual(['controller', '--kube-client-qps=100']);
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
    expect(options.featureGates).toMatchObject({ SpotToSpotConsolidation: true, NodeRepair: true });
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
