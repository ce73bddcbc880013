import { describe, expect, it } from 'vitest';
import { InternMaxLength, internStrings, StringTable } from './intern.ts';

describe('internStrings', () => {
  it('leaves a decoded pod equal and remembers each distinct short value once', () => {
    const text = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'small-1', namespace: 'default', labels: { app: 'small', tier: 'default' } },
      spec: {
        schedulerName: 'default-scheduler',
        containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', ports: [{ containerPort: 80 }] }],
        tolerations: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute', tolerationSeconds: 300 }],
      },
      status: { phase: 'Pending', message: 'x'.repeat(InternMaxLength + 1), ready: null },
    });
    const table = new StringTable();
    const a = internStrings(JSON.parse(text), table);
    const b = internStrings(JSON.parse(text), table);
    expect(a).toEqual(JSON.parse(text));
    expect(b).toEqual(a);
    // v1, Pod, small-1, default, small, default-scheduler, c, the image, the taint key, NoExecute, Pending:
    // 11 distinct values; the 65-character message, numbers, null and property names are not kept
    expect(table.size).toBe(11);
  });

  it('returns the value it was given, primitives and arrays included', () => {
    const table = new StringTable();
    const arr = ['a', ['b', { c: 'a' }], 1];
    expect(internStrings(arr, table)).toBe(arr);
    expect(arr).toEqual(['a', ['b', { c: 'a' }], 1]);
    expect(internStrings('plain', table)).toBe('plain');
    expect(internStrings(undefined, table)).toBeUndefined();
    expect(table.size).toBe(2);
  });

  it('empties the table when it is full, so values of deleted objects do not stay alive', () => {
    const table = new StringTable(3);
    for (const s of ['a', 'b', 'c']) table.intern(s);
    expect(table.size).toBe(3);
    expect(table.intern('d')).toBe('d');
    expect(table.size).toBe(1);
    expect(table.intern('a')).toBe('a');
    expect(table.size).toBe(2);
    expect(() => new StringTable(0)).toThrow(
      'StringTable: maxEntries is 0; give a whole number of at least 1',
    );
  });
});
