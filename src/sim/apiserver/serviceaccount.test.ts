import { describe, expect, it } from 'vitest';
import {
  admitPodServiceAccount,
  mountServiceAccountToken,
  podServiceAccountName,
  shouldAutomount,
} from './serviceaccount.ts';

const path = '/var/run/secrets/kubernetes.io/serviceaccount';

describe('ServiceAccount admission (kubernetes plugin/pkg/admission/serviceaccount/admission.go)', () => {
  it('names the account: serviceAccountName, else the deprecated serviceAccount, else default', () => {
    expect(podServiceAccountName({ serviceAccountName: 'a', serviceAccount: 'b' })).toBe('a');
    expect(podServiceAccountName({ serviceAccount: 'b' })).toBe('b');
    expect(podServiceAccountName({ serviceAccountName: '' })).toBe('default');
  });

  it('shouldAutomount: the pod wins, then the account, default true', () => {
    expect(
      shouldAutomount({ automountServiceAccountToken: false }, { automountServiceAccountToken: true }),
    ).toBe(true);
    expect(shouldAutomount({ automountServiceAccountToken: false }, {})).toBe(false);
    expect(shouldAutomount({}, { automountServiceAccountToken: false })).toBe(false);
    expect(shouldAutomount({}, {})).toBe(true);
  });

  it('reuses an existing kube-api-access-* volume and skips containers that already mount the path', () => {
    const spec = {
      containers: [{ name: 'own', volumeMounts: [{ name: 'mine', mountPath: path }] }, { name: 'plain' }],
      volumes: [
        { name: 'kube-api-access-abcde', projected: { sources: [] } },
        { name: 'mine', emptyDir: {} },
      ],
    };
    mountServiceAccountToken(spec, () => 'kube-api-access-zzzzz');
    expect(spec.containers).toEqual([
      { name: 'own', volumeMounts: [{ name: 'mine', mountPath: path }] },
      { name: 'plain', volumeMounts: [{ mountPath: path, name: 'kube-api-access-abcde', readOnly: true }] },
    ]);
    expect(spec.volumes.map((v) => v.name)).toEqual(['kube-api-access-abcde', 'mine']);
  });

  it('adds no volume when every container already mounts the path', () => {
    const spec: Record<string, unknown> = {
      containers: [{ name: 'own', volumeMounts: [{ name: 'mine', mountPath: path }] }],
      volumes: [{ name: 'mine', emptyDir: {} }],
    };
    mountServiceAccountToken(spec, () => 'kube-api-access-zzzzz');
    expect(spec.volumes).toEqual([{ name: 'mine', emptyDir: {} }]);
  });

  it('keeps the pod imagePullSecrets over the account ones', () => {
    const spec: Record<string, unknown> = {
      containers: [{ name: 'c' }],
      imagePullSecrets: [{ name: 'mine' }],
      automountServiceAccountToken: false,
    };
    admitPodServiceAccount(spec, { imagePullSecrets: [{ name: 'theirs' }] }, () => 'kube-api-access-zzzzz');
    expect(spec).toEqual({
      containers: [{ name: 'c' }],
      imagePullSecrets: [{ name: 'mine' }],
      automountServiceAccountToken: false,
      serviceAccountName: 'default',
      serviceAccount: 'default',
    });
  });
});
