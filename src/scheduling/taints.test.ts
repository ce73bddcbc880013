import { describe, expect, it } from 'vitest';
import { formatTaint, tolerates, toleratesTaint, untoleratedTaint } from './taints.ts';

describe('taints', () => {
  const gpu = { key: 'nvidia.com/gpu', value: 'true', effect: 'NoSchedule' as const };
  it('Equal needs the same value; Exists ignores it; empty key Exists tolerates everything', () => {
    expect(toleratesTaint({ key: 'nvidia.com/gpu', value: 'true' }, gpu)).toBe(true);
    expect(toleratesTaint({ key: 'nvidia.com/gpu', value: 'false' }, gpu)).toBe(false);
    expect(toleratesTaint({ key: 'nvidia.com/gpu', operator: 'Exists' }, gpu)).toBe(true);
    expect(toleratesTaint({ operator: 'Exists' }, gpu)).toBe(true);
    expect(toleratesTaint({ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoExecute' }, gpu)).toBe(
      false,
    );
  });
  it('PreferNoSchedule is ignored unless asked; karpenter.sh/unregistered is always ignored', () => {
    const soft = { key: 'spot', effect: 'PreferNoSchedule' as const };
    expect(tolerates([], [soft])).toBe(true);
    expect(untoleratedTaint([], [soft], { preferNoSchedule: true })).toBe(
      'did not tolerate taint spot:PreferNoSchedule',
    );
    expect(tolerates([], [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }])).toBe(true);
    expect(untoleratedTaint([], [gpu])).toBe('did not tolerate taint nvidia.com/gpu=true:NoSchedule');
    expect(formatTaint({ key: 'a', effect: 'NoExecute' })).toBe('a:NoExecute');
  });
});
